/**
 * `keelson render bird`: prints the BIRD file one control-plane host would run once the agent has
 * converged on a cluster snapshot: the VIPs of `announce = "bgp"` pools (current ingress plus what
 * `keelson plan` would allocate), the control-plane VIP when it is announced over BGP (as if the
 * local apiserver were ready), and the Nodes' pod CIDRs when a peer receives them. The text comes
 * from the announcer's pipeline (`birdHostFile`), gating included: a machine not `active`, a Node
 * not Ready, a Local Service without an endpoint on the host. Offline: it talks to no cluster and
 * writes nothing. Passwords are replaced by a placeholder unless
 * `--show-secrets` is given.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { readBgpSecrets } from "../config/bgp_secrets.ts";
import type { Config } from "../config/types.ts";
import {
  birdHostFile,
  type BirdHostInputs,
  endpointNodeNamesOf,
  nodeIsReady,
} from "../../providers/baremetal/mod.ts";
import { handlesService } from "../cloud/load_balancer_class.ts";
import type { Snapshot } from "../snapshot/load_snapshot.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { readInventory, readSnapshot } from "./command_inputs.ts";
import { convergedServices } from "./render.ts";

const USAGE =
  `Usage: keelson render bird --config FILE --host NAME [--state SNAPSHOT] [--show-secrets]

Prints the BIRD 2 configuration file that Keelson would keep on control-plane host NAME: the
sessions to its [[bgp.peers]], the control-plane VIP when [control_plane] announce = "bgp", and,
with --state, the VIPs of the Services in announce = "bgp" pools and the Nodes' pod CIDRs.
Nothing is written anywhere.

Flags:
  -c, --config FILE      the inventory (env KEELSON_CONFIG)
      --host NAME        a machine of the inventory with role "control-plane" (env KEELSON_HOST)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON (optional):
                         kubectl get nodes,svc,endpointslices -A -o yaml > state.yaml
      --show-secrets     print TCP-MD5 passwords instead of a placeholder
  -h, --help             print this help

Exit codes: 0 printed, 1 invalid inventory, unreadable snapshot or a host that cannot run
BIRD, 2 wrong command line.`;

/** Placeholder printed instead of a password; it passes \`bird -p\` like the real one. */
export const PASSWORD_PLACEHOLDER = "redacted-see-password_file";

/**
 * Runs `keelson render bird`.
 * @param args the arguments after `render bird`
 * @returns 0 when the file was printed, 1 when the inputs cannot be used
 * @throws {UsageError} on a wrong command line (exit 2)
 */
export async function renderBirdCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, {
    ...INPUT_FLAGS,
    host: { type: "string" },
    "show-secrets": { type: "boolean" },
  });
  if (values.help) {
    print(USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
  const host = requiredFlag(values.host, "--host NAME", "KEELSON_HOST");

  const config = await readInventory(configPath);
  if (!config) return EXIT_INVALID;
  if (!config.bgp) {
    printError(`Cannot render BIRD: ${configPath} has no [bgp] table, so no host runs BIRD`);
    return EXIT_INVALID;
  }
  let snapshot: Snapshot | undefined;
  if (values.state) {
    snapshot = await readSnapshot(values.state);
    if (!snapshot) return EXIT_INVALID;
  }
  const secrets = await readBgpSecrets(config);
  const passwords = values["show-secrets"] ? secrets.passwords : placeholders(config);
  const rendered = birdHostFile({
    ...snapshotInputs(config, host, snapshot),
    config,
    host,
    // the probe of the local kube-apiserver cannot run offline: the file as once it answers
    controlPlaneHealthy: true,
    passwords,
  });
  if ("error" in rendered) {
    printError(rendered.error);
    return EXIT_INVALID;
  }
  if (rendered.withheld !== undefined) {
    printError(
      `Host "${host}" announces no Service VIP and no control-plane VIP: ${rendered.withheld}; ` +
        "its sessions stay up (as keelson run renders it)",
    );
  }
  for (const { service, value, reason } of rendered.notHere) {
    printError(`Not announcing "${value}" of service "${service}" from "${host}": ${reason}`);
  }
  if (snapshot && snapshot.endpointSlices.length === 0 && hasLocalBgpService(config, snapshot)) {
    printError(
      `${values.state} holds no EndpointSlice: externalTrafficPolicy: Local Services are ` +
        "rendered as announced from every host, as keelson run does without an EndpointSlice " +
        "cache; take the snapshot with kubectl get nodes,svc,endpointslices -A -o yaml",
    );
  }
  for (const { value, reason } of rendered.skipped) {
    printError(`Not announcing "${value}": ${reason}`);
  }
  print(rendered.text);
  return EXIT_OK;
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
  snapshot: Snapshot | undefined,
): Omit<BirdHostInputs, "config" | "host" | "controlPlaneHealthy"> {
  if (!snapshot) return { services: [], nodes: [], nodeReady: true };
  const slices = snapshot.endpointSlices;
  return {
    services: convergedServices(config, snapshot.services),
    nodes: snapshot.nodes,
    nodeReady: nodeIsReady(snapshot.nodes.find((n) => n.metadata?.name === host)),
    // a snapshot without any EndpointSlice was taken without them: unknown, as without a cache
    ...(slices.length > 0
      ? { endpointNodeNames: (service: V1Service) => endpointNodeNamesOf(slices, service) }
      : {}),
  };
}

function hasLocalBgpService(config: Config, snapshot: Snapshot): boolean {
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
