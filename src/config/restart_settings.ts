/**
 * The settings `keelson run` reads only when it starts: the one list of them, what a reloaded file
 * would change among them (`pendingRestart`), and the config with their start values kept in force
 * (`pinStartOnly`), so no part of a running agent mixes the value it started with and a reloaded
 * one (BIRD started with `-s /run/bird/bird.ctl` while the session monitor polls a new socket).
 * A reload changing them is not refused: the rest of the file applies, and the log, the
 * `keelson_config_restart_required` gauge and `keelson status` say a restart is pending.
 *
 * @module
 */
import { ControllersSchema, KubernetesSchema, LeaderElectionSchema } from "./schema.ts";
import { isDuration } from "./duration.ts";
import type { Config } from "./types.ts";
import { matchesServedBy } from "./pool_serving.ts";
import { agentMode } from "./agent_mode.ts";

/** One setting `keelson run` reads only at start. */
export interface StartOnlySetting {
  /** As the README, the log and `keelson status` name it, e.g. `[bgp] socket`. */
  readonly name: string;
  /**
   * The value that matters on `host`, or undefined where the setting does not apply there
   * (`[bgp] socket` on a host that runs no BIRD).
   */
  read(config: Config, host: string): unknown;
  /** The TOML key whose start value stays in force after a reload; absent for derived facts. */
  readonly pin?: readonly [string, string];
  /**
   * Whether going from `was` to `now` needs a restart. @default any difference (a duration by its
   * milliseconds: "60s" to "1m" changes nothing the process does)
   */
  needsRestart?(was: unknown, now: unknown): boolean;
}

/** One start-only setting whose value in the file differs from the running one. */
export interface PendingRestart {
  name: string;
  /** The running value as text: a string bare, others as JSON, `(unset)` when absent. */
  was: string;
  /** The file's value, as text. */
  now: string;
}

/**
 * Whether `host` runs keepalived (`startKeepalived` asks this too): a control-plane machine, or
 * one that a VRRP pool's `served_by` selects (a retired one too: it renders a file with no VRRP
 * instance until it is active again).
 */
export function runsKeepalived(config: Config, host: string): boolean {
  return config.keepalived.enabled && selectedFor(config, host, "vrrp");
}

/** Whether `host` runs BIRD (`startBird` asks this too), as `runsKeepalived` for BGP pools. */
export function runsBird(config: Config, host: string): boolean {
  return config.bgp !== undefined && selectedFor(config, host, "bgp");
}

function selectedFor(config: Config, host: string, announce: "vrrp" | "bgp"): boolean {
  const machine = config.machines.find((m) => m.name === host);
  if (!machine) return false;
  return machine.role === "control-plane" ||
    config.pools.some((p) => (p.announce ?? "vrrp") === announce && matchesServedBy(machine, p));
}

/** A TOML key read at start by every host. */
function key(table: string, name: string): StartOnlySetting {
  return {
    name: `[${table}] ${name}`,
    read: (config) => valueAt(config, table, name) ?? null,
    pin: [table, name],
  };
}

/** A TOML key read at start only where `applies` holds (e.g. the host runs BIRD). */
function keyWhere(
  table: string,
  name: string,
  applies: (config: Config, host: string) => boolean,
): StartOnlySetting {
  return {
    name: `[${table}] ${name}`,
    read: (config, host) =>
      applies(config, host) ? valueAt(config, table, name) ?? null : undefined,
    pin: [table, name],
  };
}

/** Every key of a table read only at start (the schema names them, so a new key is listed). */
function table(name: string, shape: Record<string, unknown>): StartOnlySetting[] {
  return Object.keys(shape).map((k) => key(name, k));
}

const hostAnnounces = (config: Config, host: string) =>
  runsKeepalived(config, host) || runsBird(config, host);

/**
 * The settings `keelson run` reads only at start, in README order. Each was checked against the
 * code: what reads it builds something once (the health server, the Kubernetes client, the
 * elector, the controllers at leadership, the keepalived and BIRD appliers, the kube-apiserver
 * probe, the Routes capability). No secret is among them (`[[bgp.peers]] password_file` and
 * `[server] metrics_token_file` are re-read and not listed), so their values may be logged.
 */
export const START_ONLY_SETTINGS: readonly StartOnlySetting[] = [
  key("cluster", "name"),
  ...table("kubernetes", KubernetesSchema.shape),
  ...table("leader_election", LeaderElectionSchema.shape),
  key("server", "listen"),
  key("server", "tls_cert_file"),
  key("server", "tls_key_file"),
  ...table("controllers", ControllersSchema.shape),
  {
    // a worker a pool serves runs the host side only; other hosts campaign for the Lease
    name: "controllers and leader election on this host (machine role, [pools.served_by])",
    read: (config, host) => agentMode(config, host),
  },
  {
    // not pinned: true -> false still needs the restart to stop keepalived's side, but the
    // keepalived announcer sees the file's value and at once renders a file with no VRRP instance
    // (its VIPs would no longer follow the Services, and the other hosts no longer peer with it)
    name: "keepalived on this host ([keepalived] enabled, machine role)",
    read: (config, host) => runsKeepalived(config, host),
  },
  keyWhere("keepalived", "config_file", runsKeepalived),
  keyWhere("keepalived", "pid_file", runsKeepalived),
  keyWhere("keepalived", "check_command", runsKeepalived),
  keyWhere("keepalived", "reload_command", runsKeepalived),
  keyWhere("keepalived", "track_file_dir", hostAnnounces),
  {
    // true -> false still needs the restart to stop BIRD's side, but its routes are withdrawn at
    // once (the BIRD announcer renders a file announcing nothing): they would no longer follow
    name: "BIRD on this host ([bgp], machine role)",
    read: (config, host) => runsBird(config, host),
  },
  keyWhere("bgp", "config_file", runsBird),
  keyWhere("bgp", "socket", runsBird),
  keyWhere("bgp", "check_command", runsBird),
  {
    // the Routes capability and the route controller exist only if a peer had it at start
    name: "route controller ([[bgp.peers]] pod_cidrs)",
    read: (config) => config.bgp?.peers.some((p) => p.pod_cidrs) ?? false,
  },
  keyWhere("control_plane", "announce", hostAnnounces),
  keyWhere("control_plane", "port", hostAnnounces),
  keyWhere("control_plane", "health_interval", hostAnnounces),
  keyWhere("control_plane", "health_timeout", hostAnnounces),
  {
    // the kube-apiserver probe starts only with a VIP; removing the VIP applies at once
    name: "[control_plane] vip (none to some)",
    read: (config, host) =>
      hostAnnounces(config, host) ? config.control_plane.vip.length > 0 : undefined,
    needsRestart: (was, now) => was === false && now === true,
  },
];

/**
 * The start-only settings whose value in `next` differs from the running one on `host`.
 * @param running the config the process started with (command-line flags applied)
 * @param next a reloaded config (flags applied)
 * @param host this host's machine name
 * @param settings the list to compare. @default START_ONLY_SETTINGS
 * @returns one entry per differing setting, in list order
 */
export function pendingRestart(
  running: Config,
  next: Config,
  host: string,
  settings: readonly StartOnlySetting[] = START_ONLY_SETTINGS,
): PendingRestart[] {
  const pending: PendingRestart[] = [];
  for (const setting of settings) {
    const was = setting.read(running, host);
    const now = setting.read(next, host);
    if (was === undefined || now === undefined) continue;
    const differs = setting.needsRestart
      ? setting.needsRestart(was, now)
      : comparable(was) !== comparable(now);
    if (differs) pending.push({ name: setting.name, was: show(was), now: show(now) });
  }
  return pending;
}

/**
 * `next` with every pinned start-only key set back to its value in `running`, so every reader of
 * the live config sees what the process started with. Keys whose table is absent on either side
 * (`[bgp]` added or removed) are left as `next` has them: nothing started from them.
 * @param next a reloaded config (not modified)
 * @param running the config the process started with
 * @param settings the list to pin. @default START_ONLY_SETTINGS
 * @returns a config sharing every unpinned part with `next`
 */
export function pinStartOnly(
  next: Config,
  running: Config,
  settings: readonly StartOnlySetting[] = START_ONLY_SETTINGS,
): Config {
  const result: Record<string, unknown> = { ...next };
  const copied = new Set<string>();
  for (const setting of settings) {
    if (!setting.pin) continue;
    const [tableName, keyName] = setting.pin;
    const from = (running as Record<string, unknown>)[tableName];
    const into = result[tableName];
    if (!isTable(from) || !isTable(into)) continue;
    if (!copied.has(tableName)) {
      result[tableName] = { ...into };
      copied.add(tableName);
    }
    const target = result[tableName] as Record<string, unknown>;
    if (keyName in from) target[keyName] = from[keyName];
    else delete target[keyName];
  }
  return result as Config;
}

function valueAt(config: Config, tableName: string, keyName: string): unknown {
  const value = (config as Record<string, unknown>)[tableName];
  return isTable(value) ? value[keyName] : undefined;
}

function isTable(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The value as JSON with each duration as its milliseconds, so equal durations compare equal. */
function comparable(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => isDuration(v) ? v.ms : v);
}

/**
 * Strings bare (the log quotes the whole list once), durations as written, anything else as JSON.
 */
function show(value: unknown): string {
  if (value === null) return "(unset)";
  if (isDuration(value)) return value.text;
  return typeof value === "string" && value !== "" ? value : JSON.stringify(value);
}
