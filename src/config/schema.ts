/**
 * The inventory schema: TOML tables and keys, their types and defaults. `parse_config.ts` runs it
 * and adds the cross-field checks; `types.ts` names the result.
 *
 * @module
 */
import { z } from "zod";
import { isIP } from "node:net";
import { controllersProblem, KNOWN_CONTROLLERS } from "./controller_names.ts";

/** Names rendered into files we own (keepalived) come from this alphabet only. */
export const NAME_REGEXP = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

const name = z.string().regex(
  NAME_REGEXP,
  "must be lower-case letters, digits, '.' and '-', starting and ending with a letter or digit (at most 63)",
);

const duration = z.string().regex(
  /^\d+(\.\d+)?(ms|s|m|h)$/,
  'must be a duration such as "500ms", "15s", "5m" or "1h"',
);

const ip = z.string().refine((v) => isIP(v) !== 0, { message: "is not an IP address" });

const listen = z.string().regex(
  /^(\[[0-9a-fA-F:]+\]|[0-9.]+|[a-zA-Z0-9.-]+):\d{1,5}$/,
  'must be "host:port", e.g. "127.0.0.1:10258" or "[::1]:10258"',
);

const labelKey = z.string().regex(
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
  "is not a valid Kubernetes label key",
);
const labelValue = z.string().regex(
  /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/,
  "is not a valid Kubernetes label value",
);

/** The `[cluster]` table. */
export const ClusterSchema = z.strictObject({
  name: z.string().min(1).default("kubernetes"),
  provider: name.default("baremetal"),
});

/** The `[kubernetes]` table. */
export const KubernetesSchema = z.strictObject({
  kubeconfig: z.string().optional(),
  qps: z.number().positive().default(20),
  burst: z.number().int().positive().default(30),
});

/** The `[leader_election]` table. */
export const LeaderElectionSchema = z.strictObject({
  enabled: z.boolean().default(true),
  namespace: name.default("kube-system"),
  name: name.default("keelson"),
  lease_duration: duration.default("15s"),
  renew_deadline: duration.default("10s"),
  retry_period: duration.default("2s"),
});

/** The `[server]` table: health and metrics. */
export const ServerSchema = z.strictObject({
  listen: listen.default("127.0.0.1:10258"),
  metrics_token_file: z.string().optional(),
  tls_cert_file: z.string().optional(),
  tls_key_file: z.string().optional(),
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
  node_status_update_frequency: duration.default("5m"),
  node_monitor_period: duration.default("5s"),
  concurrent_node_syncs: z.number().int().positive().default(1),
  concurrent_service_syncs: z.number().int().positive().default(1),
});

/** The `[node_lifecycle]` table: Keelson's fail-closed guards around Node deletion. */
export const NodeLifecycleSchema = z.strictObject({
  dry_run: z.boolean().default(false),
  max_deletions_per_interval: z.number().int().min(0).default(1),
  deletion_interval: duration.default("1m"),
  max_removed_fraction: z.number().min(0).max(1).default(0.2),
});

/** The `[load_balancer]` table. */
export const LoadBalancerSchema = z.strictObject({
  default_class: z.boolean().default(true),
  class: z.string().default("keelson.io/vip"),
});

/** The `[keepalived]` table. */
export const KeepalivedSchema = z.strictObject({
  enabled: z.boolean().default(true),
  config_file: z.string().default("/etc/keepalived/conf.d/keelson.conf"),
  pid_file: z.string().default("/run/keepalived.pid"),
  reload_command: z.array(z.string()).optional(),
  check_command: z.array(z.string()).default(["keepalived", "-t", "-f"]),
  interface: name.default("eth0"),
  vrid_range: z.tuple([z.number().int(), z.number().int()]).default([100, 119]),
  unicast: z.boolean().default(true),
  advert_interval: duration.default("200ms"),
  garp_master_refresh: z.number().int().min(0).default(60),
  max_vips_per_instance: z.number().int().min(1).max(20).default(20),
  track_file_dir: z.string().default("/run/keelson"),
});

/** The `[control_plane]` table: the kube-apiserver VIP held before any cluster exists. */
export const ControlPlaneSchema = z.strictObject({
  vip: z.array(ip).default([]),
  port: z.number().int().min(1).max(65535).default(6443),
  health_interval: duration.default("1s"),
  health_timeout: duration.default("1s"),
});

/** One `[[pools]]` entry. */
export const PoolSchema = z.strictObject({
  name,
  addresses: z.array(z.string()).min(1),
  reserved: z.array(z.string()).default([]),
  auto_assign: z.boolean().default(true),
  namespaces: z.array(z.string()).default([]),
});

/** Machine states. */
export const MACHINE_STATES = ["active", "maintenance", "shutdown", "retired"] as const;

/** One `[[machines]]` entry. */
export const MachineSchema = z.strictObject({
  name,
  id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, "must be letters, digits, '.', '_' or '-'")
    .optional(),
  role: z.enum(["control-plane", "worker"]).default("worker"),
  region: labelValue.default(""),
  zone: labelValue.default(""),
  instance_type: labelValue.default(""),
  internal_ips: z.array(ip).default([]),
  external_ips: z.array(ip).default([]),
  hostname: z.string().optional(),
  state: z.enum(MACHINE_STATES).default("active"),
  labels: z.record(labelKey, labelValue).default({}),
  keepalived_priority: z.number().int().min(1).max(254).optional(),
});

/** The whole file. */
export const ConfigSchema = z.strictObject({
  cluster: ClusterSchema.prefault({}),
  kubernetes: KubernetesSchema.prefault({}),
  leader_election: LeaderElectionSchema.prefault({}),
  server: ServerSchema.prefault({}),
  controllers: ControllersSchema.prefault({}),
  node_lifecycle: NodeLifecycleSchema.prefault({}),
  load_balancer: LoadBalancerSchema.prefault({}),
  keepalived: KeepalivedSchema.prefault({}),
  control_plane: ControlPlaneSchema.prefault({}),
  pools: z.array(PoolSchema).default([]),
  machines: z.array(MachineSchema).default([]),
});
