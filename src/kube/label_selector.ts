/**
 * Kubernetes label-selector matching (`LabelSelector`: matchLabels and matchExpressions with
 * In, NotIn, Exists, DoesNotExist), as apimachinery's `LabelSelectorAsSelector` reads it. Pure.
 *
 * @module
 */

/** One requirement of a selector (validated by the inventory schema). */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  readonly values: readonly string[];
}

/** A label selector; every part must hold, and an empty one selects everything. */
export interface LabelSelector {
  readonly "match_labels": Readonly<Record<string, string>>;
  readonly "match_expressions": readonly LabelRequirement[];
}

/**
 * Whether a selector selects an object with these labels.
 * @param selector the selector
 * @param labels the object's `metadata.labels`
 * @returns true when every pair and every requirement holds
 * @example matchesLabels({ match_labels: { tier: "web" }, match_expressions: [] }, { tier: "web" }) // true
 */
export function matchesLabels(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
  const has = (key: string) => Object.hasOwn(labels, key);
  for (const [key, value] of Object.entries(selector.match_labels)) {
    if (!has(key) || labels[key] !== value) return false;
  }
  for (const r of selector.match_expressions) {
    const present = has(r.key);
    switch (r.operator) {
      case "In":
        if (!present || !r.values.includes(labels[r.key]!)) return false;
        break;
      case "NotIn":
        // as in apimachinery: a missing key satisfies NotIn
        if (present && r.values.includes(labels[r.key]!)) return false;
        break;
      case "Exists":
        if (!present) return false;
        break;
      case "DoesNotExist":
        if (present) return false;
        break;
    }
  }
  return true;
}

/**
 * A selector in kubectl's text form, for messages.
 * @param selector the selector
 * @returns e.g. `tier=web,env in (prod,stage),!legacy`; `<everything>` when empty
 */
export function formatSelector(selector: LabelSelector): string {
  const parts = Object.entries(selector.match_labels).map(([k, v]) => `${k}=${v}`);
  for (const r of selector.match_expressions) {
    if (r.operator === "In") parts.push(`${r.key} in (${r.values.join(",")})`);
    else if (r.operator === "NotIn") parts.push(`${r.key} notin (${r.values.join(",")})`);
    else if (r.operator === "Exists") parts.push(r.key);
    else parts.push(`!${r.key}`);
  }
  return parts.length === 0 ? "<everything>" : parts.join(",");
}
