/**
 * `keelson run`'s flags: upstream cloud-controller-manager names where upstream has them, each
 * overriding the matching TOML key.
 *
 * @module
 */
import type { Config, Duration } from "../config/types.ts";
import { parseDuration } from "../config/duration.ts";
import { CONTROLLERS, controllersProblem } from "../config/controller_names.ts";
import { LOG_LEVELS } from "../log/logging.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { withoutUpstreamFlags } from "./upstream_flags.ts";
import type { TlsFlags } from "./tls_flags.ts";

/** The run command's flag table (node:util parseArgs). */
export const RUN_FLAGS = {
  config: { type: "string", short: "c" },
  host: { type: "string" },
  kubeconfig: { type: "string" },
  "cluster-name": { type: "string" },
  "cluster-cidr": { type: "string" },
  controllers: { type: "string" },
  "leader-elect": { type: "string" },
  "leader-elect-lease-duration": { type: "string" },
  "leader-elect-renew-deadline": { type: "string" },
  "leader-elect-retry-period": { type: "string" },
  "leader-elect-resource-name": { type: "string" },
  "leader-elect-resource-namespace": { type: "string" },
  "bind-address": { type: "string" },
  "secure-port": { type: "string" },
  "tls-cert-file": { type: "string" },
  "tls-private-key-file": { type: "string" },
  listen: { type: "string" },
  "kube-api-qps": { type: "string" },
  "kube-api-burst": { type: "string" },
  "node-status-update-frequency": { type: "string" },
  "node-monitor-period": { type: "string" },
  "route-reconciliation-period": { type: "string" },
  "concurrent-node-syncs": { type: "string" },
  "concurrent-service-syncs": { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  v: { type: "string", short: "v" },
  help: { type: "boolean", short: "h" },
} as const;

/** Where a flag's description starts in `RUN_USAGE`. */
const DESCRIPTION_COLUMN = 43;

/**
 * Words joined by ", " and wrapped to the help's width, each line after the first indented to
 * the description column.
 */
function wrapList(words: readonly string[], width = 100): string {
  const lines: string[] = [];
  let line = "";
  for (const [i, word] of words.entries()) {
    const piece = i < words.length - 1 ? `${word},` : word;
    if (line !== "" && DESCRIPTION_COLUMN + line.length + 1 + piece.length > width) {
      lines.push(line);
      line = piece;
    } else line = line === "" ? piece : `${line} ${piece}`;
  }
  lines.push(line);
  return lines.join(`\n${" ".repeat(DESCRIPTION_COLUMN)}`);
}

/** The help text of `keelson run`; the controller names come from the controller table. */
export const RUN_USAGE = `Usage: keelson run --config FILE [flags]

Runs the agent: the controllers (--controllers below) while this process holds the leader Lease,
and keepalived (and BIRD) rendering on every control-plane host.
Flags override the matching keys of the TOML file.

Flags:
  -c, --config FILE                        inventory file (env KEELSON_CONFIG)
      --host NAME                          this host's machine name (env KEELSON_HOST; default:
                                           the short hostname)
      --kubeconfig FILE                    [kubernetes] kubeconfig; default $KUBECONFIG, then in-cluster
      --cluster-name NAME                  [cluster] name (default "kubernetes")
      --cluster-cidr CIDR[,CIDR]           [cluster] cluster_cidr: the pods' ranges (BGP pod routes)
      --controllers LIST                   "*" or a comma list; "-name" disables. Names:
                                           ${wrapList(CONTROLLERS)}
                                           (canonical upstream names are accepted too)
      --leader-elect[=BOOL]                [leader_election] enabled (default true); bare means true
      --leader-elect-lease-duration DUR    (default 15s)
      --leader-elect-renew-deadline DUR    (default 10s)
      --leader-elect-retry-period DUR      (default 2s)
      --leader-elect-resource-name NAME    (default keelson)
      --leader-elect-resource-namespace NS (default kube-system)
      --listen HOST:PORT                   health and metrics address (default 127.0.0.1:10258);
                                           HTTPS when a certificate is set, else plain HTTP
      --bind-address IP                    the host half of --listen (upstream spelling)
      --secure-port N                      the port half, served over HTTPS as upstream's is:
                                           needs a certificate (below or [server] tls_cert_file)
      --tls-cert-file FILE                 [server] tls_cert_file: PEM certificate chain
      --tls-private-key-file FILE          [server] tls_key_file: its PEM private key
      --kube-api-qps N, --kube-api-burst N client-side rate limit of each controller (default 20 / 30)
      --node-status-update-frequency DUR   periodic address sync (default 5m)
      --node-monitor-period DUR            node lifecycle period (default 5s)
      --route-reconciliation-period DUR    route controller period (default 10s)
      --concurrent-node-syncs N            (default 1)
      --concurrent-service-syncs N         (default 1)
      --log-level LEVEL                    ${LOG_LEVELS.join(", ")}, or a klog number 0-10
  -v, --v N                                klog's spelling: the number, as --log-level N
      --log-format FORMAT                  auto (text on a terminal, JSON lines otherwise), json, text
  -h, --help                               this text

Upstream flags Keelson has no use for (--cloud-config, --configure-cloud-routes, ...) are refused
with what to write instead; --cloud-provider=baremetal is accepted.

Environment: KEELSON_CONFIG (--config), KEELSON_HOST (--host), KEELSON_LOG_LEVEL (--log-level),
KUBECONFIG (--kubeconfig), NO_COLOR.`;

/** What the flags decided beyond config overrides. */
export interface RunFlags {
  configPath: string | undefined;
  host: string | undefined;
  logLevel: (typeof LOG_LEVELS)[number];
  logFormat: "auto" | "json" | "text";
  help: boolean;
  /** `--tls-cert-file` and `--tls-private-key-file`, as given. */
  tls: TlsFlags;
  /**
   * Why the flags cannot work with this (validated) config, or undefined: `--secure-port`
   * serves HTTPS, so it needs a certificate from the flags or the file.
   */
  problem(config: Config): string | undefined;
  /** Applies the flag overrides to a freshly loaded config (also after every reload). */
  apply(config: Config): Config;
}

/**
 * Parses `keelson run`'s arguments.
 * @throws {UsageError} naming the flag and the accepted values
 */
export function parseRunFlags(args: string[], env: (name: string) => string | undefined): RunFlags {
  const kept = withoutUpstreamFlags(args);
  if ("problem" in kept) throw new UsageError(kept.problem);
  // upstream's --leader-elect is a boolean flag: bare means true (pflag's NoOptDefVal)
  const normalized = kept.map((arg) => (arg === "--leader-elect" ? "--leader-elect=true" : arg));
  const { values, positionals } = parseFlags(normalized, RUN_FLAGS);
  if (positionals.length > 0) {
    const [first] = positionals;
    const bare = kept.indexOf("--leader-elect");
    const boolean = /^(true|false|[01tfTF]|TRUE|FALSE|True|False)$/.test(first!);
    const hint = boolean && bare >= 0 && kept[bare + 1] === first
      ? `; a bare --leader-elect means true, so write --leader-elect=${first}`
      : "";
    throw new UsageError(`keelson run takes no arguments, got "${first}"${hint}`);
  }
  const durations: Array<[keyof typeof values, (c: Config, v: Duration) => void]> = [
    ["leader-elect-lease-duration", (c, v) => c.leader_election.lease_duration = v],
    ["leader-elect-renew-deadline", (c, v) => c.leader_election.renew_deadline = v],
    ["leader-elect-retry-period", (c, v) => c.leader_election.retry_period = v],
    ["node-status-update-frequency", (c, v) => c.controllers.node_status_update_frequency = v],
    ["node-monitor-period", (c, v) => c.controllers.node_monitor_period = v],
    ["route-reconciliation-period", (c, v) => c.controllers.route_reconciliation_period = v],
  ];
  // parsed here by the schema's parser; `apply` puts the Duration in the Config, and the caller
  // validates the result (bounds, cross-field checks) as it would the file
  const durationFlags = durations.flatMap(([flag, set]) => {
    const value = values[flag];
    return typeof value === "string" ? [{ set, value: flagDuration(flag, value) }] : [];
  });
  // decimal digits only: Number() would also take "0x4e2a", "1e3", " 10258", "+1" and "10258.0"
  const number = (
    flag: keyof typeof values,
    integer: boolean,
    max?: number,
  ): number | undefined => {
    const value = values[flag];
    if (typeof value !== "string") return undefined;
    const decimal = integer ? /^[0-9]{1,15}$/ : /^[0-9]{1,15}(?:\.[0-9]{1,15})?$/;
    const n = Number(value);
    if (!decimal.test(value) || n <= 0 || (max !== undefined && n > max)) {
      throw new UsageError(
        `--${flag} "${value}" is not a positive ${integer ? "whole " : ""}number in decimal ` +
          `digits${max !== undefined ? ` up to ${max}` : ""}${integer ? "" : ", e.g. 20 or 0.5"}`,
      );
    }
    return n;
  };
  const qps = number("kube-api-qps", false);
  const burst = number("kube-api-burst", true);
  const nodeSyncs = number("concurrent-node-syncs", true);
  const serviceSyncs = number("concurrent-service-syncs", true);
  const securePort = number("secure-port", true, 65535);
  let leaderElect: boolean | undefined;
  if (values["leader-elect"] !== undefined) {
    const v = values["leader-elect"];
    // the spellings Go's strconv.ParseBool (and so upstream's flag) accepts
    if (["1", "t", "T", "true", "TRUE", "True"].includes(v)) leaderElect = true;
    else if (["0", "f", "F", "false", "FALSE", "False"].includes(v)) leaderElect = false;
    else throw new UsageError(`--leader-elect "${v}" must be true or false`);
  }
  const listen = listenFrom(values.listen, values["bind-address"], securePort);
  const logLevel = parseLogLevel(values["log-level"] ?? values.v ?? env("KEELSON_LOG_LEVEL"));
  const logFormat = values["log-format"] ?? "auto";
  if (logFormat !== "auto" && logFormat !== "json" && logFormat !== "text") {
    throw new UsageError(`--log-format "${logFormat}" must be auto, json or text`);
  }
  const controllers = values.controllers?.split(",").map((s) => s.trim()).filter(Boolean);
  const controllersUnusable = controllers && controllersProblem(controllers);
  if (controllersUnusable) throw new UsageError(`--controllers: ${controllersUnusable}`);

  return {
    configPath: values.config ?? env("KEELSON_CONFIG"),
    host: values.host ?? env("KEELSON_HOST"),
    logLevel,
    logFormat,
    help: values.help ?? false,
    tls: {
      "tls-cert-file": values["tls-cert-file"],
      "tls-private-key-file": values["tls-private-key-file"],
    },
    problem(config: Config): string | undefined {
      if (securePort === undefined) return undefined;
      if (config.server.tls_cert_file && config.server.tls_key_file) return undefined;
      return `--secure-port ${securePort} serves HTTPS, as upstream's does, and needs a ` +
        "certificate: add --tls-cert-file and --tls-private-key-file (or [server] tls_cert_file " +
        "and tls_key_file); for plain HTTP use --listen HOST:PORT instead";
    },
    apply(config: Config): Config {
      const c = structuredClone(config);
      if (values.kubeconfig !== undefined) c.kubernetes.kubeconfig = values.kubeconfig;
      if (values["cluster-name"] !== undefined) c.cluster.name = values["cluster-name"];
      if (values["cluster-cidr"] !== undefined) {
        c.cluster.cluster_cidr = values["cluster-cidr"].split(",").map((s) => s.trim())
          .filter((s) => s !== "");
      }
      if (controllers !== undefined) c.controllers.enabled = controllers;
      if (leaderElect !== undefined) c.leader_election.enabled = leaderElect;
      if (values["leader-elect-resource-name"] !== undefined) {
        c.leader_election.name = values["leader-elect-resource-name"];
      }
      if (values["leader-elect-resource-namespace"] !== undefined) {
        c.leader_election.namespace = values["leader-elect-resource-namespace"];
      }
      if (qps !== undefined) c.kubernetes.qps = qps;
      if (burst !== undefined) c.kubernetes.burst = burst;
      if (nodeSyncs !== undefined) c.controllers.concurrent_node_syncs = nodeSyncs;
      if (serviceSyncs !== undefined) c.controllers.concurrent_service_syncs = serviceSyncs;
      if (listen !== undefined) c.server.listen = listen(c.server.listen);
      if (values["tls-cert-file"] !== undefined) c.server.tls_cert_file = values["tls-cert-file"];
      if (values["tls-private-key-file"] !== undefined) {
        c.server.tls_key_file = values["tls-private-key-file"];
      }
      for (const { set, value } of durationFlags) set(c, value);
      return c;
    },
  };
}

function flagDuration(flag: string, value: string): Duration {
  const parsed = parseDuration(value);
  if (parsed === undefined) {
    throw new UsageError(`--${flag} "${value}" is not a duration such as "15s" or "5m"`);
  }
  return parsed;
}

// --listen wins; otherwise --bind-address/--secure-port replace their half of [server] listen.
function listenFrom(
  listen: string | undefined,
  bindAddress: string | undefined,
  securePort: number | undefined,
): ((current: string) => string) | undefined {
  if (listen !== undefined) {
    if (!/^(\[[0-9a-fA-F:]+\]|[0-9.]+|[a-zA-Z0-9.-]+):\d{1,5}$/.test(listen)) {
      throw new UsageError(`--listen "${listen}" must be HOST:PORT, e.g. 127.0.0.1:10258`);
    }
    return () => listen;
  }
  if (bindAddress === undefined && securePort === undefined) return undefined;
  return (current) => {
    const split = current.lastIndexOf(":");
    const host = bindAddress ?? current.slice(0, split);
    const port = securePort ?? Number(current.slice(split + 1));
    const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
    return `${bracketed}:${port}`;
  };
}

function parseLogLevel(value: string | undefined): (typeof LOG_LEVELS)[number] {
  if (value === undefined) return "info";
  if ((LOG_LEVELS as readonly string[]).includes(value)) {
    return value as (typeof LOG_LEVELS)[number];
  }
  // klog verbosity: 0-1 info, 2-3 debug, 4+ trace
  if (/^(?:[0-9]|10)$/.test(value)) {
    const n = Number(value);
    return n >= 4 ? "trace" : n >= 2 ? "debug" : "info";
  }
  throw new UsageError(
    `--log-level "${value}" must be one of ${LOG_LEVELS.join(", ")} or a number 0-10`,
  );
}
