/**
 * The `[pools.service_allocation]` table: which Services a pool serves and in what order pools
 * are tried, after MetalLB's IPAddressPool `serviceAllocation` (priority, namespaces, Service
 * label selectors). `providers/baremetal/ipam/pool_order.ts` applies it.
 *
 * @module
 */
import * as z from "zod/v4";

/** Kubernetes label keys: an optional DNS-subdomain prefix and a name of at most 63. */
export const LABEL_KEY = z.string().regex(
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
  "is not a valid Kubernetes label key",
).max(316);

/** Kubernetes label values: empty, or at most 63 of letters, digits, '-', '_' and '.'. */
export const LABEL_VALUE = z.string().regex(
  /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/,
  "is not a valid Kubernetes label value",
);

/** A Kubernetes namespace name (DNS-1123 label). */
export const NAMESPACE_NAME = z.string().regex(
  /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
  "is not a namespace name (lower-case letters, digits and '-', at most 63)",
);

/** One `match_expressions` entry, as in a Kubernetes LabelSelectorRequirement. */
export const LabelRequirementSchema = z.strictObject({
  key: LABEL_KEY,
  operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]),
  values: z.array(LABEL_VALUE).max(64).default([]),
}).superRefine((r, ctx) => {
  const wantsValues = r.operator === "In" || r.operator === "NotIn";
  if (wantsValues && r.values.length === 0) {
    ctx.addIssue({
      code: "custom",
      path: ["operator"],
      input: r.operator,
      message: "needs at least one entry in values",
    });
  } else if (!wantsValues && r.values.length > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["values"],
      input: r.values,
      message: `must be empty for operator "${r.operator}" (it tests the key only)`,
    });
  }
});

/**
 * A label selector (Kubernetes `LabelSelector`): every `match_labels` pair and every
 * `match_expressions` requirement must hold; an empty selector selects everything.
 */
export const LabelSelectorSchema = z.strictObject({
  match_labels: z.record(LABEL_KEY, LABEL_VALUE).default({}),
  match_expressions: z.array(LabelRequirementSchema).max(32).default([]),
});

/** The `[pools.service_allocation]` table. */
export const ServiceAllocationSchema = z.strictObject({
  /** Lower is tried first (MetalLB's rule); pools without one come after those with one. */
  priority: z.number().int().min(0).max(2_147_483_647).optional(),
  namespaces: z.array(NAMESPACE_NAME).max(1000).default([]),
  /** Any one selector matching the Service's labels admits it (MetalLB's rule). */
  service_selectors: z.array(LabelSelectorSchema).max(32).default([]),
  // Keelson caches no Namespace objects: a selector on their labels could not be evaluated
  // (nor re-evaluated when a Namespace's labels change), so it is refused rather than ignored
  namespace_selectors: z.unknown().superRefine((value, ctx) => {
    if (value === undefined) return;
    ctx.addIssue({
      code: "custom",
      input: value,
      message: "is not supported: Keelson does not watch Namespaces, so it cannot read their " +
        'labels; list the namespaces by name in "namespaces"',
    });
  }).optional(),
});
