/**
 * TOML text to a validated `Config`: syntax, then the schema (`schema.ts`, the authority), then
 * the checks that span fields. Every problem found lands in one `ConfigError`, each with the line
 * of the offending key or element.
 *
 * @module
 */
import { parse, TomlError } from "smol-toml";
import type { z } from "zod";
import { checkBgp } from "./_check_bgp.ts";
import { checkClusterCidr } from "./_check_cluster_cidr.ts";
import {
  checkKeepalivedPeers,
  checkLeaderElection,
  checkTls,
  checkVips,
  checkVridRange,
} from "./_check_control_plane.ts";
import { checkMachines } from "./_check_machines.ts";
import { checkPools } from "./_check_pools.ts";
import { type RawIssue, schemaIssues } from "./_schema_issues.ts";
import { ConfigError, type ConfigIssue } from "./config_error.ts";
import { formatPath, indexLines, locateLine } from "./source_lines.ts";
import { ConfigSchema, inertFencingMessage, MachineSchema, PoolSchema } from "./schema.ts";
import type { Config, Machine, Pool } from "./types.ts";

/**
 * Parses and validates a configuration file's text. Pure: no I/O.
 * @param text the TOML document
 * @param source the file name to put in issues, e.g. `keelson.toml`
 * @returns the validated config with defaults filled in
 * @throws {ConfigError} listing every problem found, in line order
 * @example
 * ```ts
 * const config = parseConfig('[cluster]\nname = "dc1-prod"\n', "keelson.toml");
 * config.cluster.name; // "dc1-prod"
 * ```
 */
export function parseConfig(text: string, source: string): Config {
  let raw: Record<string, unknown>;
  try {
    raw = parse(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    throw new ConfigError([syntaxIssue(error, source)], { cause: error });
  }

  const checked = checkConfigValue(raw);
  // "dry-run" is also the default, so only the text shows that it was written
  checked.issues.push(...writtenFencingIssues(raw, checked.config));
  if (checked.config !== undefined && checked.issues.length === 0) return checked.config;

  const index = indexLines(text);
  const located = checked.issues.map((issue): ConfigIssue => {
    const line = locateLine(index, issue.path);
    const out: ConfigIssue = { file: source, path: formatPath(issue.path), message: issue.message };
    if (line !== undefined) out.line = line;
    return out;
  });
  // stable sort: file order, issues without a line last
  located.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  throw new ConfigError(located);
}

/**
 * Validates a configuration value that did not come from TOML text (a Config with the flag
 * overrides of `keelson run` applied): the same schema and cross-field checks as `parseConfig`,
 * so a flag cannot bring in what the file could not.
 * @param value the candidate configuration
 * @param source what to name in issues, e.g. `keelson.toml with the command-line flags`
 * @returns the validated config
 * @throws {ConfigError} listing every problem found (without line numbers)
 */
export function validateConfig(value: unknown, source: string): Config {
  const checked = checkConfigValue(value);
  if (checked.config !== undefined) return checked.config;
  throw new ConfigError(
    checked.issues.map((issue) => ({
      file: source,
      path: formatPath(issue.path),
      message: issue.message,
    })),
  );
}

/** Schema, then cross-field checks: the config, or every issue found. */
function checkConfigValue(raw: unknown): { config?: Config; issues: RawIssue[] } {
  const result = ConfigSchema.safeParse(raw);
  const record = raw !== null && typeof raw === "object" ? raw as Record<string, unknown> : {};
  const issues: RawIssue[] = result.success ? [] : schemaIssues(result.error.issues, raw);
  const reads = new RepairedReads();
  issues.push(
    ...crossIssues(result.success ? viewOf(result.data) : partialView(record, reads), reads),
  );
  if (result.success && result.data.machines.length === 0) {
    issues.push({
      path: ["machines"],
      message: "the inventory lists no machines; add a [[machines]] entry for each host of " +
        "the cluster (an empty or truncated file is refused, never taken as an empty inventory)",
    });
  }
  return result.success && issues.length === 0 ? { config: result.data, issues } : { issues };
}

/** `fencing = "dry-run"` written while `out_of_service` is false: it would report nothing. */
function writtenFencingIssues(
  raw: Record<string, unknown>,
  config: Config | undefined,
): RawIssue[] {
  const power = raw.power;
  if (power === null || typeof power !== "object") return [];
  const written = (power as Record<string, unknown>).fencing;
  const enabled = config?.power.out_of_service ??
    (power as Record<string, unknown>).out_of_service === true;
  if (written !== "dry-run" || enabled) return [];
  return [{ path: ["power", "fencing"], message: inertFencingMessage("dry-run") }];
}

function syntaxIssue(error: TomlError, source: string): ConfigIssue {
  // smol-toml's message is "Invalid TOML document: <reason>\n\n<code excerpt>"
  const reason = error.message.split("\n")[0]!.replace(/^Invalid TOML document: /, "");
  return {
    file: source,
    line: error.line,
    path: "",
    message: `Cannot parse TOML at column ${error.column}: ${reason}`,
  };
}

interface View {
  machines: (Machine | undefined)[];
  pools: (Pool | undefined)[];
  keepalived: Config["keepalived"] | undefined;
  controlPlane: Config["control_plane"] | undefined;
  server: Config["server"] | undefined;
  leaderElection: Config["leader_election"] | undefined;
  bgp: Config["bgp"];
  bgpWritten: boolean;
  cluster: Config["cluster"] | undefined;
}

function viewOf(config: Config): View {
  return {
    machines: config.machines,
    pools: config.pools,
    keepalived: config.keepalived,
    controlPlane: config.control_plane,
    server: config.server,
    leaderElection: config.leader_election,
    bgp: config.bgp,
    bgpWritten: config.bgp !== undefined,
    cluster: config.cluster,
  };
}

/**
 * Notes when a cross-field check reads a field that failed the schema and was left to its
 * default in a repaired section (`partialView`): that check's verdict would be about the default,
 * not about what the file says, so its issues are dropped.
 */
class RepairedReads {
  touched = false;

  /**
   * @param value a section or entry that passed the schema once `removed` were taken out
   * @param removed the keys taken out (they failed the schema)
   * @returns `value`, noting every read of a removed key
   */
  watch<T extends object>(value: T, removed: ReadonlySet<string>): T {
    return new Proxy(value, {
      get: (target, key, receiver) => {
        if (typeof key === "string" && removed.has(key)) this.touched = true;
        return Reflect.get(target, key, receiver);
      },
    });
  }

  /** Runs one check; its issues, or none when it read a repaired field. */
  run<T>(check: () => T[]): T[] {
    this.touched = false;
    const issues = check();
    return this.touched ? [] : issues;
  }
}

type Schema<T> = {
  safeParse(v: unknown): { success: boolean; data?: T; error?: { issues: z.core.$ZodIssue[] } };
};

/**
 * When the schema fails, the cross-field checks still run on every section and array entry
 * that passes on its own, so one run reports all problems; indices stay those of the file. A
 * section (or entry) with bad fields is parsed again without them, so the checks of its other
 * fields run too (`advert_interval = "200"` does not hide a `vrid_range` problem); a check that
 * reads a field taken out reports nothing (`RepairedReads`).
 */
function partialView(raw: Record<string, unknown>, reads: RepairedReads): View {
  const shape = ConfigSchema.shape;
  const section = <T>(schema: Schema<T>, v: unknown): T | undefined => {
    const parsed = schema.safeParse(v);
    if (parsed.success) return parsed.data;
    if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
    const removed = new Set<string>();
    for (const issue of parsed.error?.issues ?? []) {
      const key = issue.path[0];
      if (typeof key === "string") removed.add(key);
      else if (issue.path.length === 0 && issue.code === "unrecognized_keys") {
        for (const k of issue.keys) removed.add(k);
      } else return undefined; // a problem of the whole section: nothing to repair
    }
    const rest = Object.fromEntries(
      Object.entries(v as Record<string, unknown>).filter(([k]) => !removed.has(k)),
    );
    const again = schema.safeParse(rest);
    if (!again.success || again.data === undefined || again.data === null) return undefined;
    return typeof again.data === "object"
      ? reads.watch(again.data as T & object, removed)
      : again.data;
  };
  const entries = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  return {
    machines: entries(raw.machines).map((m) => section<Machine>(MachineSchema, m)),
    pools: entries(raw.pools).map((p) => section<Pool>(PoolSchema, p)),
    keepalived: section<Config["keepalived"]>(shape.keepalived, raw.keepalived),
    controlPlane: section<Config["control_plane"]>(shape.control_plane, raw.control_plane),
    server: section<Config["server"]>(shape.server, raw.server),
    leaderElection: section<Config["leader_election"]>(shape.leader_election, raw.leader_election),
    bgp: section<Config["bgp"]>(shape.bgp, raw.bgp),
    bgpWritten: raw.bgp !== undefined,
    cluster: section<Config["cluster"]>(shape.cluster, raw.cluster),
  };
}

function crossIssues(view: View, reads = new RepairedReads()): RawIssue[] {
  let pools: ReturnType<typeof checkPools> = { issues: [], ranges: [] };
  const poolIssues = reads.run(() => {
    pools = checkPools(view.pools, view.machines);
    return pools.issues;
  });
  const controlPlane = { ...view, poolRanges: pools.ranges };
  return [
    ...reads.run(() => checkMachines(view.machines)),
    ...poolIssues,
    ...reads.run(() => checkVips(controlPlane)),
    ...reads.run(() => checkVridRange(controlPlane)),
    ...reads.run(() => checkKeepalivedPeers(controlPlane)),
    ...reads.run(() => checkTls(view.server)),
    ...reads.run(() => checkLeaderElection(view.leaderElection)),
    ...reads.run(() => checkBgp(view)),
    ...reads.run(() => checkClusterCidr({ ...view, poolRanges: pools.ranges })),
  ];
}
