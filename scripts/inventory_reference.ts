/**
 * The inventory reference of docs/inventory.md, generated from the schema (src/config/schema.ts):
 * every key with its TOML table, type, default, an example, the commands that read it and what it
 * means. The types, defaults and the set of keys come from the schema itself (zod's JSON Schema of
 * the input); the meanings and the examples the full example inventory lacks come from the table
 * below, which must name exactly the schema's keys.
 *
 *   deno run --allow-read --allow-write scripts/inventory_reference.ts          rewrites the doc
 *   deno run --allow-read scripts/inventory_reference.ts --check                exit 1 if stale
 *
 * tests/integration/deploy/inventory_reference_test.ts fails when the doc and the schema disagree.
 *
 * @module
 */
import { z } from "zod";
import { parse } from "smol-toml";
import { ConfigSchema } from "../src/config/schema.ts";
import { DURATION_REGEXP } from "../src/config/duration.ts";

/** What one key means, and an example where deploy/examples/keelson.toml has none. */
interface KeyNote {
  meaning: string;
  /** Instead of the schema's type, for a key the schema accepts no value of. */
  type?: string;
  example?: string;
}

/** The commands that read a top-level table (`keelson check` validates every key). */
const READ_BY: Record<string, string> = {
  cluster: "run, plan, render",
  kubernetes: "run, status, plan (live)",
  "leader_election": "run, status",
  server: "run",
  controllers: "run, plan",
  "node_lifecycle": "run, plan",
  power: "run",
  "load_balancer": "run, plan, render",
  keepalived: "run, render keepalived",
  "control_plane": "run, render",
  bgp: "run, plan, render bird",
  pools: "run, plan, render, status",
  machines: "run, plan, render, status",
};

/** Every key of the schema, by dotted path (`pools.service_allocation.priority`). */
export const KEY_NOTES: Record<string, KeyNote> = {
  "cluster.name": {
    meaning: "`--cluster-name`: passed to the provider, used in names Keelson creates",
  },
  "cluster.provider": { meaning: "the provider, and the providerID scheme (`baremetal://<id>`)" },
  "cluster.cluster_cidr": {
    meaning: "`--cluster-cidr`: the pods' ranges (one CIDR or a dual-stack pair); BGP pod routes " +
      "only inside; required with a `pod_cidrs` peer",
  },
  "kubernetes.kubeconfig": {
    meaning: "the agent's kubeconfig; absent: `$KUBECONFIG`, then the in-cluster ServiceAccount",
  },
  "kubernetes.qps": { meaning: "client-side rate limit of each named client (requests/s)" },
  "kubernetes.burst": { meaning: "client-side burst of each named client" },
  "leader_election.enabled": { meaning: "`--leader-elect`: only the Lease holder writes" },
  "leader_election.namespace": { meaning: "the Lease's namespace" },
  "leader_election.name": { meaning: "the Lease's name" },
  "leader_election.lease_duration": { meaning: "must satisfy lease > renew > 1.2 × retry" },
  "leader_election.renew_deadline": { meaning: "the leader gives up renewing after this long" },
  "leader_election.retry_period": { meaning: "time between attempts to take or renew the Lease" },
  "server.listen": { meaning: "health and metrics address (plain HTTP unless TLS files are set)" },
  "server.metrics_token_file": {
    meaning: "bearer token `/metrics` requires (re-read every 10 s; unreadable or empty: " +
      "`/metrics` stays closed)",
  },
  "server.tls_cert_file": {
    meaning: "serve HTTPS: set with `tls_key_file`",
    example: '"/etc/keelson/tls/server.crt"',
  },
  "server.tls_key_file": {
    meaning: "serve HTTPS: set with `tls_cert_file`",
    example: '"/etc/keelson/tls/server.key"',
  },
  "controllers.enabled": {
    meaning: "`*`, `name`, `-name`: `cloud-node`, `cloud-node-lifecycle`, `service`, `route`, " +
      "`pv-labels`, `vip-host`, `out-of-service` (upstream names too)",
  },
  "controllers.node_status_update_frequency": { meaning: "periodic Node address refresh" },
  "controllers.node_monitor_period": { meaning: "lifecycle controller period" },
  "controllers.route_reconciliation_period": {
    meaning: "route controller period (a Node change also reconciles within 0.2 s)",
  },
  "controllers.concurrent_node_syncs": { meaning: "node controller workers" },
  "controllers.concurrent_service_syncs": { meaning: "service controller workers" },
  "node_lifecycle.dry_run": { meaning: "only log and record Events about deletions" },
  "node_lifecycle.max_deletions_per_interval": {
    meaning: "Node deletions per `deletion_interval` (0: never delete)",
  },
  "node_lifecycle.deletion_interval": { meaning: "the window of the deletion rate limit" },
  "node_lifecycle.max_removed_fraction": {
    meaning: "a reload removing more than this share of machines blocks all deletions",
  },
  "power.out_of_service": {
    meaning: "the one switch: out-of-service taint on NotReady Nodes whose BMC says `Off` " +
      "(and fencing)",
    example: "true",
  },
  "power.confirm_off_for": {
    meaning: "how long `Off` must last without a break before a Node is taken out of service",
    example: '"5s"',
  },
  "power.kubelet_lease_silence": {
    meaning: "a Ready Node's kubelet Lease unchanged this long (this reader's clock), with `Off` " +
      "confirmed, is a power loss: marked NotReady and taken out of service (`0s`: off)",
    example: '"15s"',
  },
  "power.fencing": {
    meaning: "`off`, `dry-run` (Events only), `on` (ForceOff a hung host)",
    example: '"on"',
  },
  "power.fence_after": {
    meaning: "NotReady this long with power `On` before the machine is forced off",
    example: '"5m"',
  },
  "power.max_actions_per_interval": {
    meaning: "taints added (and, apart, machines forced off) per `action_interval` (0: none)",
    example: "2",
  },
  "power.action_interval": {
    meaning: "the window of the power actions' rate limit",
    example: '"1m"',
  },
  "load_balancer.default_class": {
    meaning: "Services without `spec.loadBalancerClass` are Keelson's",
  },
  "load_balancer.class": { meaning: "Services of this class are always Keelson's" },
  "keepalived.enabled": {
    meaning: "render keepalived on control-plane hosts; false at a reload withdraws this host's " +
      "VIPs at once",
  },
  "keepalived.config_file": { meaning: "the file Keelson owns (under a baked write path)" },
  "keepalived.pid_file": { meaning: "SIGHUP goes to this pid (only if it is keepalived)" },
  "keepalived.reload_command": {
    meaning: "run instead of SIGHUP",
    example: '["systemctl", "reload", "keepalived"]',
  },
  "keepalived.check_command": { meaning: "validates each new file (its path appended)" },
  "keepalived.interface": {
    meaning: "where VIPs go; carries the machines' internal addresses",
  },
  "keepalived.vrid_range": {
    meaning: "VRIDs Keelson may use; the lowest two are the control-plane VIP's",
  },
  "keepalived.unicast": {
    meaning: "unicast VRRP to the control-plane machines (false: multicast)",
  },
  "keepalived.advert_interval": { meaning: "VRRPv3 advert interval (failover ≈ 3.5 × this)" },
  "keepalived.garp_master_refresh": {
    meaning: "seconds between gratuitous ARP/NA refreshes while master (0: off)",
  },
  "keepalived.max_vips_per_instance": {
    meaning: "VIPs per VRRP instance before another VRID is used",
  },
  "keepalived.track_file_dir": {
    meaning: "track files and staging; root's `<dir>-daemons` beside it: notify FIFO",
  },
  "control_plane.vip": { meaning: "the kube-apiserver VIP(s), at most one per family" },
  "control_plane.port": { meaning: "probed at `https://127.0.0.1:<port>/readyz`" },
  "control_plane.health_interval": { meaning: "probe period (2 results in a row change it)" },
  "control_plane.health_timeout": { meaning: "how long one probe may take" },
  "control_plane.announce": {
    meaning: "`bgp`: BIRD announces the control-plane VIP while the local apiserver is ready",
    example: '"bgp"',
  },
  "bgp.asn": { meaning: "the control-plane hosts' AS (a machine may override it)" },
  "bgp.config_file": { meaning: "the file BIRD runs; Keelson owns it" },
  "bgp.socket": { meaning: "BIRD's control socket (`bird -s`)" },
  "bgp.check_command": {
    meaning: "validates each new file (its path appended)",
    example: '["bird", "-p", "-c"]',
  },
  "bgp.hold_time": { meaning: "seconds (BIRD's default 240 kept dead hosts' paths for minutes)" },
  "bgp.keepalive_time": { meaning: "seconds" },
  "bgp.connect_retry_time": { meaning: "seconds" },
  "bgp.connect_delay_time": { meaning: "seconds" },
  "bgp.error_wait_time": { meaning: "[min, max] seconds BIRD waits after an error" },
  "bgp.bfd.interval_ms": { meaning: "BFD transmit and receive interval of `bfd = true` peers" },
  "bgp.bfd.multiplier": { meaning: "BFD detection multiplier" },
  "bgp.graceful_restart": {
    meaning:
      "`aware`: restarting peers keep our routes; `on`: we restart gracefully too (`bird -R`)",
  },
  "bgp.graceful_restart_time": { meaning: "seconds the routers keep our routes during a restart" },
  "bgp.families": { meaning: "address families of every session (MP-BGP, one session per peer)" },
  "bgp.communities": { meaning: 'aliases: name → "A:B" or "A:B:C"' },
  "bgp.status_interval_ms": {
    meaning: "how often BIRD's sessions are read for metrics and conditions",
    example: "2000",
  },
  "bgp.peers.name": { meaning: "metrics label and log name" },
  "bgp.peers.address": { meaning: "the router's address" },
  "bgp.peers.asn": { meaning: "the router's AS" },
  "bgp.peers.hosts": {
    meaning: "BIRD hosts that peer with it: control-plane machines and those a BGP pool's " +
      "served_by selects (neither this nor zones: all)",
  },
  "bgp.peers.zones": { meaning: "or: BIRD hosts whose zone is listed" },
  "bgp.peers.multihop": { meaning: "0: directly connected; 1–255: multihop with that TTL" },
  "bgp.peers.bfd": { meaning: "BFD on this session (`[bgp.bfd]` timers)" },
  "bgp.peers.password_file": {
    meaning: "TCP-MD5 key, read from this file (refused if every user may read it)",
    example: '"/etc/keelson/bgp/tor-a.key"',
  },
  "bgp.peers.pools": { meaning: '`announce = "bgp"` pools it receives (empty: all)' },
  "bgp.peers.pod_cidrs": { meaning: "receives the Nodes' pod CIDRs (route controller)" },
  "bgp.peers.subnet": {
    meaning: "the subnet it shares with the Nodes: only their pod CIDRs go to it; required with " +
      "`pod_cidrs` on a direct session",
  },
  "bgp.peers.control_plane": {
    meaning: 'receives the control-plane VIP when `[control_plane] announce = "bgp"`',
    example: "false",
  },
  "bgp.peers.communities": { meaning: "communities (or aliases) on every route to it" },
  "bgp.peers.local_preference": { meaning: "sent to iBGP peers only (same AS)", example: "200" },
  "bgp.peers.hold_time": { meaning: "overrides `[bgp] hold_time` for this peer", example: "30" },
  "bgp.peers.keepalive_time": {
    meaning: "overrides `[bgp] keepalive_time` for this peer",
    example: "10",
  },
  "pools.name": { meaning: "lower-case name Services ask for" },
  "pools.addresses": {
    meaning: "CIDRs, `first-last` ranges or single addresses, IPv4 or IPv6",
  },
  "pools.reserved": { meaning: "never handed out; must lie in the pool" },
  "pools.auto_assign": { meaning: "Services naming no pool may get addresses from it" },
  "pools.namespaces": { meaning: "only Services in these namespaces may use it (empty: all)" },
  "pools.announce": {
    meaning: "`bgp`: announced through BIRD by every healthy host that serves the pool",
  },
  "pools.served_by.machines": {
    meaning: "serving machines by name; every key given must match (absent table: the " +
      "control-plane machines serve the pool)",
    example: '["w-1", "w-2"]',
  },
  "pools.served_by.roles": {
    meaning: "serving machines by role (`control-plane`, `worker`)",
    example: '["worker"]',
  },
  "pools.served_by.labels": {
    meaning: "serving machines by inventory labels; each must match",
    example: '{ rack = "r1" }',
  },
  "pools.service_allocation.priority": {
    meaning: "lower is tried first; pools without one come after",
    example: "10",
  },
  "pools.service_allocation.namespaces": {
    meaning: "only Services in these namespaces (same as `namespaces`; keep one)",
    example: '["shop"]',
  },
  "pools.service_allocation.service_selectors.match_labels": {
    meaning: "a selector on the Service's labels; any one selector admits it",
    example: '{ "example.com/tier" = "public" }',
  },
  "pools.service_allocation.service_selectors.match_expressions.key": {
    meaning: "a label key",
    example: '"example.com/tier"',
  },
  "pools.service_allocation.service_selectors.match_expressions.operator": {
    meaning: "`In`, `NotIn`, `Exists`, `DoesNotExist`",
    example: '"In"',
  },
  "pools.service_allocation.service_selectors.match_expressions.values": {
    meaning: "values for `In` and `NotIn`",
    example: '["public"]',
  },
  "pools.service_allocation.namespace_selectors": {
    meaning: "refused: Keelson does not watch Namespaces; list them in `namespaces`",
    type: "none accepted",
    example: "(none)",
  },
  "machines.name": {
    meaning: "the Node name kubelet registers; a host's own machine (or `--host`)",
  },
  "machines.id": {
    meaning: "asset tag or serial (absent: the name); providerID `baremetal://<id>`",
  },
  "machines.role": { meaning: "`control-plane` machines run keepalived (and BIRD) and serve VIPs" },
  "machines.region": { meaning: "`topology.kubernetes.io/region`" },
  "machines.zone": { meaning: "`topology.kubernetes.io/zone`" },
  "machines.instance_type": { meaning: "`node.kubernetes.io/instance-type`" },
  "machines.internal_ips": {
    meaning: "InternalIP addresses; the first per family is the VRRP source",
  },
  "machines.external_ips": { meaning: "ExternalIP addresses" },
  "machines.hostname": { meaning: "the Hostname address (default: the name)" },
  "machines.state": { meaning: "`active`, `maintenance`, `shutdown`, `retired`" },
  "machines.labels": { meaning: "extra Node labels (never `kubernetes.io`/`k8s.io` keys)" },
  "machines.keepalived_priority": {
    meaning: "fixed VRRP priority of this host's instances (absent: rotated)",
    example: "150",
  },
  "machines.bgp.router_id": {
    meaning: "BIRD's router id (default: the first internal IPv4)",
    example: '"10.0.0.13"',
  },
  "machines.bgp.asn": { meaning: "overrides `[bgp] asn` for this host", example: "64514" },
  "machines.bgp.source_address": {
    meaning: "source address of this host's sessions",
    example: '"10.0.0.13"',
  },
  "machines.bmc.endpoint": {
    meaning: "the BMC's (Redfish) base URL, `https://host[:port]` only",
    example: '"https://10.0.9.21"',
  },
  "machines.bmc.system": {
    meaning: "absent: the BMC's only system, or the one whose SerialNumber is the `id`",
    example: '"/redfish/v1/Systems/1"',
  },
  "machines.bmc.username_file": {
    meaning: "file holding the BMC's user",
    example: '"/etc/keelson/bmc/w-1.user"',
  },
  "machines.bmc.password_file": {
    meaning: "file holding the BMC's password (owner and group only)",
    example: '"/etc/keelson/bmc/w-1.password"',
  },
  "machines.bmc.ca_file": {
    meaning: "PEM: the CA of the BMC's certificate, or that certificate (default: system CAs)",
    example: '"/etc/keelson/bmc/w-1.pem"',
  },
  "machines.bmc.certificate_sha256": {
    meaning: "instead of `ca_file`: the BMC's own certificate, pinned",
    example: '"5A:0C:…:E8"',
  },
  "machines.bmc.poll_interval": { meaning: "how often the leader asks the BMC", example: '"5s"' },
  "machines.bmc.timeout": { meaning: "the deadline of one request to the BMC", example: '"5s"' },
};

/** A JSON Schema node, as far as this file reads it. */
interface Node {
  type?: string;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  prefixItems?: Node[];
  additionalProperties?: Node | boolean;
  enum?: unknown[];
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  maxItems?: number;
  minItems?: number;
}

/** One key of the reference. */
export interface KeyRow {
  /** Dotted path, e.g. `pools.service_allocation.priority`. */
  path: string;
  /** The TOML table it is written in, e.g. `[[pools]]`. */
  table: string;
  key: string;
  type: string;
  default: string;
  readBy: string;
}

function isTable(node: Node): boolean {
  return node.type === "object" && node.properties !== undefined;
}

function isArrayOfTables(node: Node): boolean {
  return node.type === "array" && node.items !== undefined && isTable(node.items);
}

function range(node: Node): string {
  const lo = node.minimum ??
    (node.exclusiveMinimum !== undefined ? `>${node.exclusiveMinimum}` : undefined);
  const hi = node.maximum;
  if (lo === undefined && hi === undefined) return "";
  return ` ${lo ?? ""}–${hi ?? ""}`;
}

/** The type of a leaf, in words. */
function typeOf(node: Node): string {
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(" \\| ");
  switch (node.type) {
    case "boolean":
      return "boolean";
    case "integer":
      return `integer${range(node)}`;
    case "number":
      return `number${range(node)}`;
    case "string":
      return node.pattern === DURATION_REGEXP.source ? "duration" : "string";
    case "array": {
      if (node.prefixItems) return `[${node.prefixItems.map(typeOf).join(", ")}]`;
      const max = node.maxItems !== undefined ? ` (at most ${node.maxItems})` : "";
      return `array of ${typeOf(node.items ?? {})}${max}`;
    }
    case "object":
      return "table of strings";
    default:
      return "any";
  }
}

/** A value as it is written in TOML. */
export function tomlValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length === 0
      ? "{}"
      : `{ ${entries.map(([k, v]) => `${JSON.stringify(k)} = ${tomlValue(v)}`).join(", ")} }`;
  }
  return JSON.stringify(value);
}

/** Every key of the inventory schema, in the schema's order. */
export function schemaKeys(): KeyRow[] {
  const root = z.toJSONSchema(ConfigSchema, { io: "input", unrepresentable: "any" }) as Node;
  const rows: KeyRow[] = [];
  const walk = (node: Node, path: string[], table: string, top: string) => {
    // a table's own keys first, then its sub-tables, as TOML writes them
    const entries = Object.entries(node.properties ?? {});
    const nested = (child: Node) => isTable(child) || isArrayOfTables(child);
    const ordered = [
      ...entries.filter(([, child]) => !nested(child)),
      ...entries.filter(([, child]) => nested(child)),
    ];
    for (const [key, child] of ordered) {
      const here = [...path, key];
      const dotted = here.join(".");
      const section = top || key;
      if (isTable(child)) {
        walk(child, here, `[${dotted}]`, section);
      } else if (isArrayOfTables(child)) {
        walk(child.items!, here, `[[${dotted}]]`, section);
      } else {
        const required = node.required?.includes(key) ?? false;
        rows.push({
          path: dotted,
          table,
          key,
          type: typeOf(child),
          default: child.default !== undefined
            ? `\`${tomlValue(child.default)}\``
            : required
            ? "required"
            : "—",
          readBy: READ_BY[section] ?? "run",
        });
      }
    }
  };
  walk(root, [], "", "");
  return rows;
}

/** The first value at a dotted path of the full example, looking through arrays of tables. */
function exampleAt(here: unknown, parts: string[]): unknown {
  if (parts.length === 0) return here;
  if (Array.isArray(here)) {
    for (const entry of here) {
      const found = exampleAt(entry, parts);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (here === null || typeof here !== "object") return undefined;
  return exampleAt((here as Record<string, unknown>)[parts[0]!], parts.slice(1));
}

/** The reference section of docs/inventory.md, as markdown. */
export function renderReference(exampleToml: string): string {
  const example = parse(exampleToml) as Record<string, unknown>;
  const lines: string[] = [];
  let table = "";
  for (const row of schemaKeys()) {
    if (row.table !== table) {
      table = row.table;
      lines.push(
        "",
        `### \`${table}\``,
        "",
        "| key | type | default | example | read by | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
      );
    }
    const note = KEY_NOTES[row.path];
    const found = exampleAt(example, row.path.split("."));
    const sample = note?.example ?? (found !== undefined ? tomlValue(found) : undefined);
    const cells = [
      `\`${row.key}\``,
      note?.type ?? row.type,
      row.default,
      sample === undefined ? "—" : `\`${sample.replaceAll("|", "\\|")}\``,
      row.readBy,
      note?.meaning.replaceAll("|", "\\|") ?? "",
    ];
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines.join("\n").trim();
}

export const BEGIN =
  "<!-- BEGIN inventory reference: generated by scripts/inventory_reference.ts -->";
export const END = "<!-- END inventory reference -->";

/**
 * The doc with its reference section replaced by a freshly generated one.
 * @param doc docs/inventory.md as it is
 * @param exampleToml deploy/examples/keelson.toml
 */
export function withReference(doc: string, exampleToml: string): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) {
    throw new Error(`docs/inventory.md must hold the lines ${BEGIN} and ${END}`);
  }
  return `${doc.slice(0, start + BEGIN.length)}\n\n${renderReference(exampleToml)}\n\n${
    doc.slice(end)
  }`;
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url);
  const docPath = new URL("docs/inventory.md", root);
  const doc = await Deno.readTextFile(docPath);
  const example = await Deno.readTextFile(new URL("deploy/examples/keelson.toml", root));
  const fresh = withReference(doc, example);
  if (Deno.args.includes("--check")) {
    if (fresh !== doc) {
      // deno-lint-ignore no-console
      console.error("docs/inventory.md is stale: deno run -A scripts/inventory_reference.ts");
      Deno.exit(1);
    }
  } else {
    await Deno.writeTextFile(docPath, fresh);
  }
}
