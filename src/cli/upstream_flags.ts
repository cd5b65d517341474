/**
 * Flags of the upstream cloud-controller-manager that `keelson run` does not take as they are,
 * each with the Keelson way to say the same thing, so an operator who copies a CCM command line
 * learns what to write instead of reading an argument parser's text.
 *
 * @module
 */

/** An upstream flag `keelson run` refuses, or accepts only with certain values. */
interface UpstreamFlag {
  /** Values accepted as no-ops (they already describe what Keelson does). */
  readonly accepts?: readonly string[];
  /** Why it is refused and what to write instead (a clause after the flag's name). */
  readonly instead: string;
}

const DROP = "is an upstream flag Keelson has no use for; drop it";

/** Upstream flags `keelson run` refuses, by name. */
export const UPSTREAM_FLAGS: Readonly<Record<string, UpstreamFlag>> = {
  "cloud-provider": {
    accepts: ["baremetal"],
    instead: 'names the provider; Keelson has one, "baremetal" ([cluster] provider in the ' +
      "inventory): drop the flag or write --cloud-provider=baremetal",
  },
  "cloud-config": {
    instead: "is upstream's provider config file; Keelson reads its inventory from --config FILE",
  },
  "configure-cloud-routes": {
    instead: "turns the route controller on or off; Keelson's way is --controllers " +
      '(e.g. --controllers="*,-route") or [controllers] enabled',
  },
  "allocate-node-cidrs": {
    instead: "is ignored by upstream's CCM too (kube-controller-manager allocates pod CIDRs); " +
      "drop it",
  },
  "cidr-allocator-type": { instead: DROP },
  "use-service-account-credentials": {
    instead: "gives each controller its own ServiceAccount; Keelson's controllers all use the " +
      "identity of --kubeconfig",
  },
  "leader-elect-resource-lock": {
    accepts: ["leases"],
    instead: "must be leases: Keelson always elects with a coordination.k8s.io Lease",
  },
  master: { instead: "overrides the API server address; put it in the kubeconfig (--kubeconfig)" },
  "kube-api-content-type": { instead: "is not needed: Keelson speaks JSON to the API server" },
  "authentication-kubeconfig": {
    instead: "delegates /metrics authentication; Keelson protects /metrics with a bearer " +
      "token file ([server] metrics_token_file)",
  },
  "authorization-kubeconfig": {
    instead: "delegates /metrics authorization; Keelson protects /metrics with a bearer " +
      "token file ([server] metrics_token_file)",
  },
  "feature-gates": { instead: "is not needed: Keelson has no feature gates" },
  "min-resync-period": { instead: DROP },
  "controller-start-interval": { instead: DROP },
  "node-sync-period": { instead: "is a no-op upstream too; drop it" },
  "allow-untagged-cloud": { instead: DROP },
  "external-cloud-volume-plugin": { instead: DROP },
  "enable-leader-migration": { instead: "migrates from in-tree providers; Keelson has none" },
  "leader-migration-config": { instead: "migrates from in-tree providers; Keelson has none" },
  "concurrent-node-status-updates": {
    instead: "is not split out in Keelson: --concurrent-node-syncs sets both",
  },
};

/**
 * The arguments without the upstream flags Keelson accepts as no-ops, or why one is refused.
 * @param args the arguments after `run`
 * @returns the remaining arguments, or a sentence starting with the flag
 */
export function withoutUpstreamFlags(args: readonly string[]): string[] | { problem: string } {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      out.push(...args.slice(i));
      break;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/s.exec(arg);
    const flag = match && UPSTREAM_FLAGS[match[1]!];
    if (!match || !flag) {
      out.push(arg);
      continue;
    }
    let value = match[2];
    if (
      value === undefined && flag.accepts && i + 1 < args.length && !args[i + 1]!.startsWith("-")
    ) {
      value = args[++i];
    }
    if (value !== undefined && flag.accepts?.includes(value)) continue;
    const shown = value === undefined ? `--${match[1]}` : `--${match[1]}="${value}"`;
    return { problem: `${shown} ${flag.instead}` };
  }
  return out;
}
