/**
 * BIRD's file for `keelson render bird`: the file one control-plane host would run once the agent
 * has converged on a cluster snapshot: the VIPs of `announce = "bgp"` pools (current ingress plus
 * what `keelson plan` would allocate), the control-plane VIP when it is announced over BGP (as if
 * the local apiserver were ready), and the Nodes' pod CIDRs when a peer receives them. The text
 * comes from the announcer's pipeline (`birdHostFile`), gating included: a machine not `active`,
 * a Node not Ready, a Local Service without an endpoint on the host. Offline: writes nothing.
 * Passwords are replaced by a placeholder unless secrets are asked for.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type {
  HostFileRequest,
  HostFileResult,
  SnapshotObjects,
} from "../../../src/cloud/host_file.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import { readBgpSecrets } from "../../../src/config/bgp_secrets.ts";
import type { Config } from "../../../src/config/types.ts";
import { readyEndpointNodeNames } from "../../../src/kube/endpoint_nodes.ts";
import { convergedServices } from "../ipam/plan_allocations.ts";
import { birdHostFile, type BirdHostInputs } from "./host_config.ts";
import { nodeIsReady } from "../serving_hold.ts";

/** The help text of `keelson render bird`. */
export const BIRD_RENDER_USAGE =
  `Usage: keelson render bird --config FILE --host NAME [--state SNAPSHOT] [--show-secrets]

Prints the BIRD 2 configuration file that Keelson would keep on host NAME: the
sessions to its [[bgp.peers]], the control-plane VIP when [control_plane] announce = "bgp", and,
with --state, the VIPs of the Services in announce = "bgp" pools and the Nodes' pod CIDRs.
Nothing is written anywhere.

Flags:
  -c, --config FILE      the inventory (env KEELSON_CONFIG)
      --host NAME        a control-plane machine, or one a BGP pool's served_by selects
                         (env KEELSON_HOST)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON (optional):
                         kubectl get nodes,svc,endpointslices -A -o yaml > state.yaml
      --show-secrets     print TCP-MD5 passwords instead of a placeholder
  -h, --help             print this help

Exit codes: 0 printed, 1 invalid inventory, unreadable snapshot or a host that cannot run
BIRD, 2 wrong command line.`;

/** Placeholder printed instead of a password; it passes `bird -p` like the real one. */
export const PASSWORD_PLACEHOLDER = "redacted-see-password_file";

/**
 * One host's BIRD file from the inventory and a snapshot.
 * @param request the host, the snapshot and whether to show the passwords
 * @param config the validated inventory
 * @returns the text with notes on what was left out, or why it cannot be rendered
 */
export async function renderBirdFile(
  request: HostFileRequest,
  config: Config,
): Promise<HostFileResult> {
  const { host, snapshot } = request;
  if (!config.bgp) {
    return {
      error: `Cannot render BIRD: ${request.configFile} has no [bgp] table, so no host runs BIRD`,
    };
  }
  const secrets = await readBgpSecrets(config);
  const passwords = request.showSecrets ? secrets.passwords : placeholders(config);
  const rendered = birdHostFile({
    ...snapshotInputs(config, host, snapshot),
    config,
    host,
    // the probe of the local kube-apiserver cannot run offline: the file as once it answers
    controlPlaneHealthy: true,
    passwords,
  });
  if ("error" in rendered) return { error: rendered.error };
  const notes: string[] = [];
  if (rendered.withheld !== undefined) {
    const what = rendered.withheld.controlPlane
      ? "no Service VIP and no control-plane VIP"
      : "no Service VIP";
    notes.push(
      `Host "${host}" announces ${what}: ${rendered.withheld.reason}; its sessions stay up ` +
        "(as keelson run renders it)",
    );
  }
  for (const { service, value, reason } of rendered.notHere) {
    notes.push(`Not announcing "${value}" of service "${service}" from "${host}": ${reason}`);
  }
  if (snapshot && snapshot.endpointSlices.length === 0 && hasLocalBgpService(config, snapshot)) {
    notes.push(
      `${snapshot.file} holds no EndpointSlice: externalTrafficPolicy: Local Services are ` +
        "rendered as announced from every host, as keelson run does without an EndpointSlice " +
        "cache; take the snapshot with kubectl get nodes,svc,endpointslices -A -o yaml",
    );
  }
  for (const { value, reason } of rendered.skipped) {
    notes.push(`Not announcing "${value}": ${reason}`);
  }
  return { text: rendered.text, notes };
}

/**
 * The inputs the announcer reads from its caches, read from a snapshot instead: the Services as
 * the leader will have allocated them, the Nodes, this host's readiness and the EndpointSlices.
 * Without a snapshot: no Service and no Node, as before the caches sync on a host whose BIRD file
 * holds no VIP.
 */
function snapshotInputs(
  config: Config,
  host: string,
  snapshot: SnapshotObjects | undefined,
): Omit<BirdHostInputs, "config" | "host" | "controlPlaneHealthy"> {
  if (!snapshot) return { services: [], nodes: [], nodeReady: true };
  const slices = snapshot.endpointSlices;
  return {
    services: convergedServices(config, snapshot.services),
    nodes: snapshot.nodes,
    nodeReady: nodeIsReady(snapshot.nodes.find((n) => n.metadata?.name === host)),
    // a snapshot without any EndpointSlice was taken without them: unknown, as without a cache
    ...(slices.length > 0
      ? { endpointNodeNames: (service: V1Service) => readyEndpointNodeNames(slices, service) }
      : {}),
  };
}

function hasLocalBgpService(config: Config, snapshot: SnapshotObjects): boolean {
  return snapshot.services.some((s) =>
    s.spec?.externalTrafficPolicy === "Local" && handlesService(config, s)
  ) && config.pools.some((p) => p.announce === "bgp");
}

function placeholders(config: Config): Map<string, string> {
  const map = new Map<string, string>();
  for (const peer of config.bgp?.peers ?? []) {
    if (peer.password_file) map.set(peer.password_file, PASSWORD_PLACEHOLDER);
  }
  return map;
}
