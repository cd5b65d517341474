/**
 * The shape of the Nodes, Services, EndpointSlices, Leases and PersistentVolumes a snapshot may hold: the fields Keelson
 * reads, with their types, checked with zod before any code touches them (a snapshot is untrusted
 * input: an annotation that is a number or `spec.ports` written as a map must be refused with the
 * item and field, never reach `.trim()`). Other fields pass through unchecked.
 *
 * @module
 */
import * as z from "zod/v4";

const stringMap = z.record(z.string(), z.string());
const time = z.union([z.string(), z.date()]);

const metadata = z.looseObject({
  name: z.string().min(1, "is missing").max(253),
  namespace: z.string().max(63).optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().optional(),
  creationTimestamp: time.nullish(),
  deletionTimestamp: time.nullish(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  finalizers: z.array(z.string()).optional(),
});

const port = z.looseObject({
  name: z.string().optional(),
  protocol: z.string().optional(),
  port: z.number().int(),
  targetPort: z.union([z.number(), z.string()]).optional(),
  nodePort: z.number().int().optional(),
});

/** A Service as Keelson reads it. */
export const SnapshotServiceSchema = z.looseObject({
  metadata,
  spec: z.looseObject({
    type: z.string().optional(),
    ports: z.array(port).optional(),
    selector: stringMap.nullish(),
    loadBalancerIP: z.string().optional(),
    loadBalancerClass: z.string().nullish(),
    ipFamilies: z.array(z.string()).optional(),
    ipFamilyPolicy: z.string().optional(),
    externalTrafficPolicy: z.string().optional(),
    allocateLoadBalancerNodePorts: z.boolean().optional(),
  }).optional(),
  status: z.looseObject({
    loadBalancer: z.looseObject({
      ingress: z.array(z.looseObject({
        ip: z.string().optional(),
        hostname: z.string().optional(),
        ipMode: z.string().optional(),
      })).optional(),
    }).optional(),
  }).optional(),
});

/** A Node as Keelson reads it. */
export const SnapshotNodeSchema = z.looseObject({
  metadata,
  spec: z.looseObject({
    providerID: z.string().optional(),
    podCIDR: z.string().optional(),
    podCIDRs: z.array(z.string()).optional(),
    unschedulable: z.boolean().optional(),
    taints: z.array(z.looseObject({
      key: z.string(),
      value: z.string().optional(),
      effect: z.string(),
      timeAdded: time.nullish(),
    })).optional(),
  }).optional(),
  status: z.looseObject({
    addresses: z.array(z.looseObject({ type: z.string(), address: z.string() })).optional(),
    conditions: z.array(z.looseObject({
      type: z.string(),
      status: z.string(),
      reason: z.string().optional(),
      message: z.string().optional(),
      lastHeartbeatTime: time.nullish(),
      lastTransitionTime: time.nullish(),
    })).optional(),
  }).optional(),
});

/** An EndpointSlice as Keelson reads it (where a Service's ready endpoints run). */
export const SnapshotEndpointSliceSchema = z.looseObject({
  metadata,
  endpoints: z.array(z.looseObject({
    nodeName: z.string().nullish(),
    conditions: z.looseObject({ ready: z.boolean().nullish() }).nullish(),
  })).nullish(),
});

/** A Lease as Keelson reads it (a host's heartbeat: `keelson-host-<name>` in kube-system). */
export const SnapshotLeaseSchema = z.looseObject({
  metadata,
  spec: z.looseObject({
    holderIdentity: z.string().nullish(),
    leaseDurationSeconds: z.number().int().nullish(),
    renewTime: time.nullish(),
  }).optional(),
});

/** A PersistentVolume as Keelson reads it. */
export const SnapshotPersistentVolumeSchema = z.looseObject({
  metadata,
  spec: z.looseObject({}).optional(),
});

/**
 * The first problem of an item, as `field: what is wrong`.
 * @param issues zod's issues for the item
 * @param item the item, to describe the offending value
 * @returns e.g. `spec.ports: must be an array, not a table`
 */
export function describeItemIssue(issues: readonly z.core.$ZodIssue[], item: unknown): string {
  const issue = issues[0];
  if (!issue) return "is not valid";
  const path = issue.path.map((p) => typeof p === "number" ? `[${p}]` : `.${String(p)}`).join("")
    .replace(/^\./, "");
  let value: unknown = item;
  for (const p of issue.path) {
    value = value !== null && typeof value === "object"
      ? (value as Record<PropertyKey, unknown>)[p]
      : undefined;
  }
  const what = issue.code === "invalid_type"
    ? `must be ${article(issue.expected)}, not ${kindOf(value)}`
    : issue.message;
  return `${path || "the item"}: ${what}`;
}

function article(expected: string): string {
  const names: Record<string, string> = {
    string: "a string",
    number: "a number",
    int: "an integer",
    boolean: "true or false",
    array: "a list",
    object: "a map",
    record: "a map",
  };
  return names[expected] ?? expected;
}

function kindOf(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return "a date";
  if (typeof value === "object") return "a map";
  return `the ${typeof value} ${JSON.stringify(value)}`.slice(0, 80);
}
