/**
 * The inventory schema: TOML tables and keys, their types and defaults. `parse_config.ts` runs it
 * and adds the cross-field checks; `types.ts` names the result.
 *
 * @module
 */
import * as z from "zod/v4";
import { parseIp } from "../net/ip.ts";
import { parseSystemPath } from "./bmc_system_path.ts";
import { AnnounceSchema, BgpSchema, MachineBgpSchema } from "./bgp_schema.ts";
import { controllersProblem, KNOWN_CONTROLLERS } from "./controller_names.ts";
import { type Duration, DURATION_REGEXP, isDuration, parseDuration } from "./duration.ts";
import {
  LABEL_KEY,
  LABEL_VALUE,
  NAMESPACE_NAME,
  ServiceAllocationSchema,
} from "./service_allocation_schema.ts";

/** Names rendered into files we own (keepalived) come from this alphabet only. */
export const NAME_REGEXP = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

/** Absolute paths Keelson renders into keepalived: no spaces, quotes, braces or `..`. */
export const SAFE_PATH_REGEXP = /^\/(?!.*\/\.\.?(\/|$))[A-Za-z0-9._/-]{0,255}$/;

/** The providers `keelson run` can build (src/cloud/registry.ts registers them by name). */
export const KNOWN_PROVIDERS: readonly string[] = ["baremetal"];

/** Linux network interface names: IFNAMSIZ is 16 bytes with the terminating NUL. */
export const MAX_INTERFACE_NAME = 15;

/**
 * Control-plane machines (other than retired ones) that take part in VRRP: priorities run from
 * 200 down by at least 1 per rank, and VRRP priorities end at 1.
 */
export const MAX_VRRP_PEERS = 200;

const name = z.string().regex(
  NAME_REGEXP,
  "must be lower-case letters, digits, '.' and '-', starting and ending with a letter or digit (at most 63)",
);

/** A file path: non-empty, no NUL, bounded. */
const path = z.string().min(1).max(4096).regex(/^[^\0]*$/, "must not hold a NUL character");
/** A file Keelson writes: absolute, so `check` judges the path `run` (cwd `/` under systemd) uses. */
const writtenPath = path.regex(
  /^\//,
  "must be an absolute path (a relative one would depend on the directory Keelson starts in)",
);

/**
 * A duration such as "15s", bounded: every duration ends up in a timer, and a timer above
 * 2^31-1 ms (24.8 days) fires at once, 0 spins, and each setting has a range that makes sense.
 * The text is parsed here, once (`parseDuration`): the Config carries a `Duration`, its text for
 * people and its milliseconds for timers. A Duration fed back (a Config with the command-line
 * flags applied, validated again) is read again from its text, never from its `ms`.
 * Defaults are given as text with `.prefault("15s")`, so they pass through the parser too.
 * @param min the shortest allowed, e.g. "1s"
 * @param max the longest allowed
 * @param why why the bounds are what they are, for the message
 * @param stepMs the value must be a multiple of this many ms. @default 1
 */
function duration(min: string, max: string, why: string, stepMs = 1) {
  const lo = parseDuration(min)!.ms, hi = parseDuration(max)!.ms;
  const text = z.string().regex(
    DURATION_REGEXP,
    'must be a duration such as "500ms", "15s", "5m" or "1h"',
  )
    .superRefine((value, ctx) => {
      const ms = parseDuration(value)?.ms;
      if (ms === undefined) return; // the regex above reported it
      if (!Number.isInteger(ms / stepMs) || ms < lo || ms > hi) {
        ctx.addIssue({
          code: "custom",
          input: value,
          message: `must be between ${min} and ${max}` +
            `${stepMs > 1 ? ` in steps of ${stepMs}ms` : ""}: ${why}`,
        });
      }
    })
    // runs only when the checks above passed, so the text is a duration
    .transform((value): Duration => parseDuration(value)!);
  return z.preprocess((value) => isDuration(value) ? value.text : value, text);
}

const ip = z.string().refine((v) => parseIp(v) !== undefined, {
  message: "is not an IP address (one address, no zone id, no spaces)",
});

/** A TCP port. */
const port = z.number().int().min(1).max(65535);

const listen = z.string().superRefine((value, ctx) => {
  const problem = listenProblem(value);
  if (problem) ctx.addIssue({ code: "custom", input: value, message: problem });
});

/**
 * Why a `host:port` cannot be listened on as written, or undefined when it can be tried.
 * @param value e.g. "127.0.0.1:10258" or "[::1]:10258"
 * @returns a predicate sentence, or undefined
 */
export function listenProblem(value: string): string | undefined {
  const match = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const usage = 'must be "host:port", e.g. "127.0.0.1:10258" or "[::1]:10258"';
  if (!match) return usage;
  const [, bracketed, plain, portText] = match;
  const p = Number(portText);
  if (p > 65535) return `has port ${portText}; ports are 0 (any free port) to 65535`;
  if (bracketed !== undefined) {
    return parseIp(bracketed)?.family === 6
      ? undefined
      : `has "[${bracketed}]", not an IPv6 address`;
  }
  const host = plain!;
  if (host === "") return undefined; // ":10258": every interface, as serve.ts reads it
  if (/^[0-9.]+$/.test(host)) {
    return parseIp(host) ? undefined : `has "${host}", which is not an IPv4 address`;
  }
  return /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(host)
    ? undefined
    : `has "${host}", which is neither an IP address nor a host name`;
}

const labelKey = LABEL_KEY;
const labelValue = LABEL_VALUE;
const namespace = NAMESPACE_NAME;
/** A DNS host name as kubelet reports it (RFC 1123), at most 253 characters. */
const hostname = z.string().max(253).regex(
  /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/,
  "is not a host name (letters, digits, '-' and '.', labels of at most 63)",
);
/** Why the worker counts stop at 64. */
const WORKERS_WHY = "is more than 64 workers (at most 64): more only queue on the client-side " +
  "rate limit";

/** A command as an argv list: run without a shell. */
const command = z.array(z.string().min(1).max(4096)).min(1).max(64);

/** The `[cluster]` table. */
export const ClusterSchema = z.strictObject({
  name: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
    "must be letters, digits, '.', '_' and '-', starting with a letter or digit (at most 63)",
  ).default("kubernetes"),
  // `run` builds the provider by this name: one it does not have would fail only at start
  provider: z.string().refine((v) => KNOWN_PROVIDERS.includes(v), {
    message: `is not a provider Keelson has (providers: "baremetal")`,
  }).default("baremetal"),
  /**
   * The pods' ranges (upstream `--cluster-cidr`): one CIDR, or an IPv4 and IPv6 pair. Only pod
   * CIDRs inside them are announced over BGP; required with a `pod_cidrs` peer.
   */
  cluster_cidr: z.array(z.string()).max(
    2,
    "holds at most two CIDRs: one IPv4 and one IPv6 (a dual-stack pair)",
  ).default([]),
});

/** The `[kubernetes]` table. */
export const KubernetesSchema = z.strictObject({
  kubeconfig: path.optional(),
  // client-side rate limit; above these the apiserver's own priority and fairness decides
  qps: z.number().positive().max(
    10_000,
    "is above 10000 requests per second; the apiserver's own priority and fairness limits " +
      "well before that",
  ).default(20),
  burst: z.number().int().min(1).max(
    100_000,
    "is above 100000 requests; a burst that large is no limit at all",
  ).default(30),
});

/** The `[leader_election]` table. */
export const LeaderElectionSchema = z.strictObject({
  enabled: z.boolean().default(true),
  namespace: name.default("kube-system"),
  name: name.default("keelson"),
  lease_duration: duration(
    "1s",
    "10m",
    "a standby takes over at most this long after the leader stops renewing",
  ).prefault("15s"),
  renew_deadline: duration("500ms", "10m", "the leader gives up renewing after this long")
    .prefault("10s"),
  retry_period: duration("100ms", "1m", "the time between attempts to take or renew the Lease")
    .prefault("2s"),
});

/** The `[server]` table: health and metrics. */
export const ServerSchema = z.strictObject({
  listen: listen.default("127.0.0.1:10258"),
  metrics_token_file: path.optional(),
  tls_cert_file: path.optional(),
  tls_key_file: path.optional(),
});

/** The `[controllers]` table. */
export const ControllersSchema = z.strictObject({
  enabled: z.array(z.string()).default(["*"]).superRefine((list, ctx) => {
    // an unknown name would otherwise leave every controller off without a word
    for (const [i, entry] of list.entries()) {
      if (controllersProblem([entry])) {
        ctx.addIssue({
          code: "custom",
          path: [i],
          message: `is not a controller ${KNOWN_CONTROLLERS}`,
          input: entry,
        });
      }
    }
  }),
  node_status_update_frequency: duration(
    "1s",
    "24h",
    "each period re-reads every Node's addresses; under 1s floods the apiserver",
  ).prefault("5m"),
  node_monitor_period: duration(
    "1s",
    "1h",
    "each period checks every Node; under 1s floods the apiserver",
  ).prefault("5s"),
  route_reconciliation_period: duration(
    "1s",
    "1h",
    "each period lists every route and Node; under 1s floods the apiserver and BIRD",
  ).prefault("10s"),
  // workers per controller: more than 64 only queue on the client's rate limit
  concurrent_node_syncs: z.number().int().min(1).max(64, WORKERS_WHY).default(1),
  concurrent_service_syncs: z.number().int().min(1).max(64, WORKERS_WHY).default(1),
});

/** The `[node_lifecycle]` table: Keelson's fail-closed guards around Node deletion. */
export const NodeLifecycleSchema = z.strictObject({
  dry_run: z.boolean().default(false),
  max_deletions_per_interval: z.number().int().min(0).max(
    10_000,
    "is above 10000 Node deletions per interval, which is no rate limit at all",
  ).default(1),
  deletion_interval: duration(
    "1s",
    "24h",
    "the window of the deletion rate limit; 0 would remove the limit",
  ).prefault("1m"),
  max_removed_fraction: z.number().min(0).max(1).default(0.2),
});

/** The shortest silence of a kubelet's Lease that counts (other than 0, off). */
const KUBELET_LEASE_SILENCE_MIN_MS = 12_000;

/**
 * The `[power]` table: what Keelson does with the power its machines' power controllers (BMCs)
 * report: the out-of-service taint on a NotReady Node whose machine is off, and fencing.
 */
export const PowerSchema = z.strictObject({
  // the one switch: nothing is tainted or fenced while false
  out_of_service: z.boolean().default(false),
  confirm_off_for: duration(
    "1s",
    "1h",
    "the power must have said off this long without a break (from the first Off answer to a " +
      "later one) before a NotReady Node is taken out of service",
  ).prefault("5s"),
  // the second witness of a power loss (with the power's Off): a Ready Node is marked NotReady
  // once its kubelet's Lease has been silent this long; "0s" waits for kube-controller-manager
  kubelet_lease_silence: duration(
    "0s",
    "10m",
    'the kubelet renews its Lease every 10s by default; "0s" turns the Lease witness off',
  ).superRefine((value, ctx) => {
    if (value.ms !== 0 && value.ms < KUBELET_LEASE_SILENCE_MIN_MS) {
      ctx.addIssue({
        code: "custom",
        input: value.text,
        message: `must be "0s" (off) or at least 12s: the kubelet renews its Lease every 10s ` +
          "by default, so a shorter silence is a running kubelet between two renewals",
      });
    }
  }).prefault("15s"),
  fencing: z.enum(["off", "dry-run", "on"]).default("dry-run"),
  fence_after: duration(
    "30s",
    "24h",
    "a Node must have been NotReady this long while its power says on before its machine is " +
      "forced off; under 30s a kubelet restart would look like a dead host",
  ).prefault("5m"),
  max_actions_per_interval: z.number().int().min(0).max(
    1000,
    "is above 1000 actions per interval, which is no rate limit at all",
  ).default(2),
  action_interval: duration(
    "1s",
    "24h",
    "the window of the power actions' rate limit; 0 would remove the limit",
  ).prefault("1m"),
}).superRefine((power, ctx) => {
  // fencing is a step of the out-of-service path: with the path off it would never run
  if (power.fencing === "on" && !power.out_of_service) {
    ctx.addIssue({
      code: "custom",
      path: ["fencing"],
      input: power.fencing,
      message: inertFencingMessage("on"),
    });
  }
});

/**
 * Why a `fencing` value does nothing: `out_of_service` is false.
 * @param value the value written
 * @returns the sentence, said at `fencing`
 */
export function inertFencingMessage(value: "on" | "dry-run"): string {
  return `is "${value}" but out_of_service is false, so nothing would ever be fenced ` +
    "(fencing is a step of the out-of-service path): set out_of_service = true, or remove " +
    "fencing";
}

/** The `[load_balancer]` table. */
export const LoadBalancerSchema = z.strictObject({
  default_class: z.boolean().default(true),
  // a loadBalancerClass is a label-style name; "" would match no Service's class
  class: labelKey.default("keelson.io/vip"),
});

/** The `[keepalived]` table. */
export const KeepalivedSchema = z.strictObject({
  enabled: z.boolean().default(true),
  config_file: writtenPath.default("/etc/keepalived/conf.d/keelson.conf"),
  pid_file: path.default("/run/keepalived.pid"),
  reload_command: command.optional(),
  check_command: command.default(["keepalived", "-t", "-f"]),
  interface: name.max(
    MAX_INTERFACE_NAME,
    `must be at most ${MAX_INTERFACE_NAME} characters (Linux interface names)`,
  ).default("eth0"),
  vrid_range: z.tuple([z.number().int(), z.number().int()]).default([100, 119]),
  unicast: z.boolean().default(true),
  advert_interval: duration(
    "10ms",
    "40950ms",
    "VRRPv3 adverts carry the interval in centiseconds, 12 bits",
    10,
  ).prefault("200ms"),
  // seconds; 0 turns the refresh off, more than an hour refreshes too rarely to matter
  garp_master_refresh: z.number().int().min(0).max(
    3600,
    "is more than 3600 seconds (at most 3600; 0 turns the refresh off, and a refresh rarer " +
      "than hourly does nothing switches would notice)",
  ).default(60),
  max_vips_per_instance: z.number().int().min(1).max(20).default(20),
  track_file_dir: z.string().regex(
    SAFE_PATH_REGEXP,
    "must be an absolute path of letters, digits, '.', '_', '-' and '/' without \"..\" " +
      "(it is written into keepalived's configuration)",
  ).max(200).default("/run/keelson"),
});

/** The `[control_plane]` table: the kube-apiserver VIP held before any cluster exists. */
export const ControlPlaneSchema = z.strictObject({
  vip: z.array(ip).default([]),
  port: port.default(6443),
  health_interval: duration(
    "100ms",
    "1m",
    "the apiserver probe's period: the VIP leaves a failed apiserver within about that long",
  ).prefault("1s"),
  health_timeout: duration("100ms", "1m", "how long one probe of the apiserver may take")
    .prefault("1s"),
  announce: AnnounceSchema,
});

/**
 * `[pools.served_by]`: which machines hold (VRRP) or announce (BGP) a pool's addresses. Every key
 * given must match (machine name in `machines`, role in `roles`, every label in `labels`); a key
 * left out matches every machine. Without the table a pool is served by the control-plane
 * machines.
 */
export const ServedBySchema = z.strictObject({
  machines: z.array(name).min(1).max(1024).optional(),
  roles: z.array(z.enum(["control-plane", "worker"])).min(1).max(2).optional(),
  labels: z.record(labelKey, labelValue).optional(),
}).superRefine((servedBy, ctx) => {
  if (
    servedBy.machines === undefined && servedBy.roles === undefined &&
    (servedBy.labels === undefined || Object.keys(servedBy.labels).length === 0)
  ) {
    ctx.addIssue({
      code: "custom",
      input: servedBy,
      message: "selects nothing: give machines, roles or labels (or remove the table: the " +
        "control-plane machines serve the pool)",
    });
  }
});

/** One `[[pools]]` entry. */
export const PoolSchema = z.strictObject({
  name,
  addresses: z.array(z.string().max(100)).min(1),
  reserved: z.array(z.string().max(100)).default([]),
  auto_assign: z.boolean().default(true),
  namespaces: z.array(namespace).default([]),
  announce: AnnounceSchema,
  served_by: ServedBySchema.optional(),
  service_allocation: ServiceAllocationSchema.optional(),
}).superRefine((pool, ctx) => {
  if (pool.namespaces.length > 0 && (pool.service_allocation?.namespaces.length ?? 0) > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["namespaces"],
      input: pool.namespaces,
      message: "is set together with [pools.service_allocation] namespaces; keep one list " +
        "(service_allocation.namespaces)",
    });
  }
});

/** Machine states. */
export const MACHINE_STATES = ["active", "maintenance", "shutdown", "retired"] as const;

/** The largest Redfish endpoint URL accepted. */
const MAX_ENDPOINT_LENGTH = 2048;

/**
 * Why a BMC endpoint cannot be used, or undefined when it can: HTTPS only (the BMC's credentials
 * travel in every request), no credentials, query or fragment in the URL, not even an empty one,
 * and nothing a URL parser would drop or rewrite (request paths are appended to the text).
 * @param value e.g. "https://10.0.9.11" or "https://bmc-cp-1.example.net:8443"
 * @returns a predicate sentence, or undefined
 */
export function bmcEndpointProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL; write "https://<BMC address>[:port]"';
  }
  if (url.protocol !== "https:") {
    return `uses ${url.protocol.replace(/:$/, "")}; only https is accepted (the BMC's ` +
      "credentials are in every request): give the BMC's CA in ca_file or its certificate's certificate_sha256";
  }
  // the URL parser drops an empty "?", "#" or "@" and strips tabs, newlines and spaces; the
  // request paths are appended to the text as written, so the text itself must be plain
  // deno-lint-ignore no-control-regex -- control characters are what is refused
  if (/[\x00-\x20\x7f\\]/.test(value)) {
    return "holds a space, control character or backslash, which a URL parser drops or " +
      'rewrites; write the plain "https://host[:port]"';
  }
  if (url.username !== "" || url.password !== "" || value.includes("@")) {
    return "holds credentials (user information before '@'); put them in username_file and " +
      "password_file";
  }
  if (value.includes("?") || value.includes("#")) {
    return "holds a query or fragment ('?' or '#', even an empty one): every request path " +
      'would follow it and miss the Redfish service; write "https://host[:port]"';
  }
  if (url.pathname !== "/" && url.pathname !== "") {
    return "must be the BMC's base URL only (\"https://host[:port]\"); the system's path goes " +
      "in system";
  }
  return undefined;
}

/**
 * A SHA-256 certificate fingerprint in the one form Keelson compares: 32 upper-case hex pairs
 * joined by ':', as `openssl x509 -noout -fingerprint -sha256` prints it (and node:tls's
 * `fingerprint256`).
 * @param value the fingerprint with or without ':' between the pairs, any case, an optional
 *   `sha256 Fingerprint=` prefix (openssl's output line)
 * @returns the normal form, or undefined when `value` is not a SHA-256 fingerprint
 */
export function normalSha256Fingerprint(value: string): string | undefined {
  const bare = value.trim().replace(/^sha256 fingerprint=/i, "");
  const hex = /^[0-9A-Fa-f]{64}$/.test(bare)
    ? bare
    : /^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){31}$/.test(bare)
    ? bare.replaceAll(":", "")
    : undefined;
  if (hex === undefined) return undefined;
  return hex.toUpperCase().replace(/..(?!$)/g, "$&:");
}

/** `[machines.bmc]`: the machine's BMC (Redfish), where Keelson reads its power. */
export const BmcSchema = z.strictObject({
  endpoint: z.string().max(MAX_ENDPOINT_LENGTH).superRefine((value, ctx) => {
    const problem = bmcEndpointProblem(value);
    if (problem) ctx.addIssue({ code: "custom", input: value, message: problem });
  }),
  // one path segment no parser or server reads as another resource (bmc_system_path.ts)
  system: z.string().max(256).superRefine((value, ctx) => {
    const parsed = parseSystemPath(value);
    if ("problem" in parsed) {
      ctx.addIssue({
        code: "custom",
        input: value,
        message: `${parsed.problem}; it must be one Redfish system path such as ` +
          '"/redfish/v1/Systems/1"',
      });
    }
  }).optional(),
  username_file: path,
  password_file: path,
  ca_file: path.optional(),
  certificate_sha256: z.string().max(200).superRefine((value, ctx) => {
    if (normalSha256Fingerprint(value) === undefined) {
      ctx.addIssue({
        code: "custom",
        input: value,
        message: "is not a SHA-256 fingerprint: write the 64 hex digits `openssl x509 -noout " +
          "-fingerprint -sha256 -in <the BMC's certificate>` prints (with or without ':')",
      });
    }
  }).transform((value) => normalSha256Fingerprint(value)!).optional(),
  poll_interval: duration(
    "1s",
    "10m",
    "the BMC is asked this often; under 1s loads a BMC for nothing, and a power-off is seen at " +
      "most about two intervals late",
  ).prefault("5s"),
  timeout: duration("100ms", "1m", "how long one request to the BMC may take").prefault("5s"),
}).superRefine((bmc, ctx) => {
  if (bmc.ca_file !== undefined && bmc.certificate_sha256 !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["certificate_sha256"],
      input: bmc.certificate_sha256,
      message: "is given with ca_file; give one: ca_file (a CA that signed the BMC's " +
        "certificate) or certificate_sha256 (the BMC's own certificate, pinned)",
    });
  }
});

/** One `[[machines]]` entry. */
export const MachineSchema = z.strictObject({
  name,
  id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, "must be letters, digits, '.', '_' or '-'")
    .optional(),
  role: z.enum(["control-plane", "worker"]).default("worker"),
  region: labelValue.default(""),
  zone: labelValue.default(""),
  instance_type: labelValue.default(""),
  internal_ips: z.array(ip).max(16).default([]),
  external_ips: z.array(ip).max(16).default([]),
  hostname: hostname.optional(),
  state: z.enum(MACHINE_STATES).default("active"),
  labels: z.record(labelKey, labelValue).default({}),
  keepalived_priority: z.number().int().min(1).max(254).optional(),
  bgp: MachineBgpSchema.optional(),
  bmc: BmcSchema.optional(),
});

/** The whole file. */
export const ConfigSchema = z.strictObject({
  cluster: ClusterSchema.prefault({}),
  kubernetes: KubernetesSchema.prefault({}),
  leader_election: LeaderElectionSchema.prefault({}),
  server: ServerSchema.prefault({}),
  controllers: ControllersSchema.prefault({}),
  node_lifecycle: NodeLifecycleSchema.prefault({}),
  power: PowerSchema.prefault({}),
  load_balancer: LoadBalancerSchema.prefault({}),
  keepalived: KeepalivedSchema.prefault({}),
  control_plane: ControlPlaneSchema.prefault({}),
  bgp: BgpSchema.optional(),
  pools: z.array(PoolSchema).default([]),
  machines: z.array(MachineSchema).default([]),
});
