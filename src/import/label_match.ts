/**
 * Label-selector matching for imported selectors (MetalLB's `ipAddressPoolSelectors` against
 * pools' labels, `nodeSelectors` against Nodes' labels), as apimachinery's
 * `LabelSelectorAsSelector` reads them: every matchLabels pair and every expression must hold; a
 * missing key satisfies NotIn; an empty selector selects everything. Pure.
 *
 * @module
 */
import type { MetallbSelector } from "./metallb_schema.ts";

/**
 * Whether the selector selects an object with these labels.
 * @param selector the imported selector
 * @param labels the object's labels
 * @returns true when every part holds
 */
export function selects(
  selector: MetallbSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
  const has = (key: string) => Object.hasOwn(labels, key);
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || labels[key] !== value) return false;
  }
  for (const r of selector.matchExpressions ?? []) {
    const values = r.values ?? [];
    const present = has(r.key);
    if (r.operator === "In" && !(present && values.includes(labels[r.key]!))) return false;
    if (r.operator === "NotIn" && present && values.includes(labels[r.key]!)) return false;
    if (r.operator === "Exists" && !present) return false;
    if (r.operator === "DoesNotExist" && present) return false;
  }
  return true;
}

/**
 * A selector in kubectl's text form, for comments.
 * @param selector the imported selector
 * @returns e.g. `rack=a1,zone in (z1,z2)`; `<everything>` when empty
 */
export function selectorText(selector: MetallbSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of selector.matchExpressions ?? []) {
    const values = (r.values ?? []).join(",");
    if (r.operator === "In") parts.push(`${r.key} in (${values})`);
    else if (r.operator === "NotIn") parts.push(`${r.key} notin (${values})`);
    else if (r.operator === "Exists") parts.push(r.key);
    else parts.push(`!${r.key}`);
  }
  return parts.length === 0 ? "<everything>" : parts.join(",");
}
