/**
 * A Node's Ready condition, read once for everyone who judges it (the serving hosts, Local
 * traffic, `keelson status`, the lifecycle controller). The Node comes from the API and is read
 * defensively: anything that is not an object with a list of conditions has none.
 *
 * @module
 */

/** The Ready condition's status: `Unknown` also for a value the API does not define. */
export type ReadyCondition = "True" | "False" | "Unknown";

/**
 * The status of a Node's Ready condition.
 * @param node a Node as the API returned it
 * @returns the status, or undefined when the Node has no Ready condition (or is no object)
 */
export function readyCondition(node: unknown): ReadyCondition | undefined {
  const status = isRecord(node) ? node.status : undefined;
  const conditions = isRecord(status) ? status.conditions : undefined;
  if (!Array.isArray(conditions)) return undefined;
  const ready = conditions.find((c) => isRecord(c) && c.type === "Ready");
  if (!isRecord(ready)) return undefined;
  return ready.status === "True" || ready.status === "False" ? ready.status : "Unknown";
}

/**
 * Whether a Node counts as Ready for serving: only a Ready condition that is present and not
 * `True` says no, so a Node not registered yet, or without the condition, is not held against
 * its host while a cluster comes up.
 * @param node a Node as the API returned it, or undefined
 */
export function countsReady(node: unknown): boolean {
  const status = readyCondition(node);
  return status === undefined || status === "True";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
