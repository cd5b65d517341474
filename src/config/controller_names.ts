/**
 * Controller names for `--controllers` / `[controllers] enabled`: upstream's canonical names and
 * their aliases, plus Keelson's pv-labels, VIP-host and out-of-service controllers.
 *
 * @module
 */

/** Keelson's controllers, by the short name used in logs, health checks and metrics. */
export const CONTROLLERS = [
  "cloud-node",
  "cloud-node-lifecycle",
  "service",
  "route",
  "pv-labels",
  "vip-host",
  "out-of-service",
] as const;
/** One controller's short name. */
export type ControllerName = (typeof CONTROLLERS)[number];

const ALIASES: Record<string, ControllerName> = {
  "cloud-node": "cloud-node",
  "cloud-node-controller": "cloud-node",
  "cloud-node-lifecycle": "cloud-node-lifecycle",
  "cloud-node-lifecycle-controller": "cloud-node-lifecycle",
  "service": "service",
  "service-lb-controller": "service",
  "route": "route",
  "node-route-controller": "route",
  "pv-labels": "pv-labels",
  "persistentvolume-labels": "pv-labels",
  "vip-host": "vip-host",
  "vip-host-controller": "vip-host",
  "out-of-service": "out-of-service",
  "out-of-service-controller": "out-of-service",
};

/** Upstream's canonical names (health check names follow them). */
export const CANONICAL_NAMES: Record<ControllerName, string> = {
  "cloud-node": "cloud-node-controller",
  "cloud-node-lifecycle": "cloud-node-lifecycle-controller",
  "service": "service-lb-controller",
  "route": "node-route-controller",
  "pv-labels": "pv-labels-controller",
  "vip-host": "vip-host-controller",
  "out-of-service": "out-of-service-controller",
};

/**
 * Resolves an enable list as upstream does: `*` enables all, `name` enables one, `-name`
 * disables one (also after `*`).
 * @returns the enabled controllers, or the unknown names
 */
export function resolveControllers(
  list: string[],
): { enabled: Set<ControllerName> } | { unknown: string[] } {
  const enabled = new Set<ControllerName>();
  const unknown: string[] = [];
  const entries = list.length === 0 ? ["*"] : list;
  if (entries.includes("*")) CONTROLLERS.forEach((c) => enabled.add(c));
  for (const entry of entries) {
    if (entry === "*") continue;
    const negated = entry.startsWith("-");
    const name = ALIASES[negated ? entry.slice(1) : entry];
    if (!name) {
      unknown.push(entry);
      continue;
    }
    if (negated) enabled.delete(name);
    else enabled.add(name);
  }
  return unknown.length > 0 ? { unknown } : { enabled };
}

/**
 * Why an enable list cannot be used, or undefined when it can.
 * @param list the `--controllers` / `[controllers] enabled` entries
 * @returns a sentence naming the unknown entries and the known names
 */
export function controllersProblem(list: string[]): string | undefined {
  const resolved = resolveControllers(list);
  if (!("unknown" in resolved)) return undefined;
  return `unknown controller ${
    resolved.unknown.map((u) => `"${u}"`).join(", ")
  } ${KNOWN_CONTROLLERS}`;
}

/** The accepted names, for messages. */
export const KNOWN_CONTROLLERS = `(known: "*", ${
  CONTROLLERS.map((c) => `"${c}"`).join(", ")
}, their upstream names; prefix "-" to disable)`;
