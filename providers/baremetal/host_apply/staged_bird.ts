/**
 * Judges a BIRD file the unprivileged agent staged, for the root step that installs it: accepted
 * only when it is byte-for-byte what Keelson renders for this host from the inventory (which
 * root owns) and the password files (which root reads itself), given the inputs the inventory
 * does not fix, read back from the file: the Service VIPs, whether the control-plane VIP is
 * announced, and the pod routes. Those go through the same model as the agent's (a VIP must lie
 * in an `announce = "bgp"` pool; a pod route inside `[cluster] cluster_cidr`, towards one of a
 * non-retired machine's own `internal_ips`), so the rendering bounds what BIRD may export
 * whatever the file says: an `include`, a `protocol kernel`, another protocol or filter, a
 * default route or a prefix of no pool makes the file differ and be refused.
 *
 * @module
 */
import { errorMessage } from "../../../src/log/error_message.ts";
import type { V1Node } from "@kubernetes/client-node";
import type { Config } from "../../../src/config/types.ts";
import { machineId } from "../../../src/config/types.ts";
import { canonicalIp, parseIp } from "../../../src/net/ip.ts";
import { renderHostBird, serviceVipsInBirdFile } from "../bird/host_config.ts";
import { parsePrefix } from "../bird/model.ts";
import { firstDifference } from "./first_difference.ts";

/** What the staged text is judged against. */
export interface BirdJudgement {
  /** The inventory, as root reads it. */
  config: Config;
  /** This machine's name. */
  host: string;
  /** Passwords by `password_file`, read by root (`readBgpSecrets`). */
  passwords?: ReadonlyMap<string, string>;
}

const CP_STATIC = /^protocol static keelson_cp[46] \{$/m;
const POD_STATIC = /^protocol static keelson_pods[46]_(s\d{1,4}|any) \{$/;
const POD_ROUTE =
  /^ {2}route ([0-9A-Fa-f.:]{2,45}\/\d{1,3}) blackhole \{ bgp_next_hop = ([0-9A-Fa-f.:]{2,45}); \};$/;

/**
 * Why a staged BIRD file may not be installed.
 * @param text the staged file
 * @param judgement the inventory, host and passwords
 * @returns undefined when it is exactly Keelson's rendering, else a sentence naming the first
 *   difference or the route no machine of the inventory can be the next hop of
 */
export function stagedBirdProblem(text: string, judgement: BirdJudgement): string | undefined {
  const { config, host } = judgement;
  if (!config.bgp) return `the inventory has no [bgp] table: no BIRD file is installed`;
  const nodes = podRouteNodes(text, config);
  if ("error" in nodes) return nodes.error;
  let expected: string;
  try {
    const rendered = renderHostBird({
      config,
      host,
      serviceVips: serviceVipsInBirdFile(text),
      nodes: nodes.nodes,
      controlPlaneHealthy: CP_STATIC.test(text),
      ...(judgement.passwords ? { passwords: judgement.passwords } : {}),
    });
    if ("error" in rendered) return rendered.error;
    expected = rendered.text;
  } catch (error) {
    return `Keelson cannot render BIRD for host "${host}" from the inventory: ${
      errorMessage(error)
    }`;
  }
  const difference = firstDifference(text, expected);
  return difference &&
    `not what Keelson renders for host "${host}" from the inventory: ${difference}`;
}

/**
 * The Nodes a file's pod routes stand for: one per machine whose `internal_ips` holds a next
 * hop, with that machine's providerID, the CIDRs routed to it and the next hop as its InternalIP.
 * The model then judges them as it judges the API's Nodes.
 */
function podRouteNodes(text: string, config: Config): { nodes: V1Node[] } | { error: string } {
  const byMachine = new Map<string, { cidrs: string[]; nextHops: string[] }>();
  let inPods = false;
  for (const [index, line] of text.split("\n").entries()) {
    if (line.startsWith("protocol ")) inPods = POD_STATIC.test(line);
    else if (line === "}") inPods = false;
    else if (inPods) {
      const route = POD_ROUTE.exec(line);
      if (!route) continue; // not a route Keelson writes: the comparison refuses it
      const prefix = parsePrefix(route[1]!);
      const nextHop = canonicalIp(route[2]!);
      if (!prefix || nextHop === undefined) continue;
      const hop = parseIp(nextHop)!;
      const machine = config.machines.find((m) =>
        m.internal_ips.some((ip) => {
          const own = parseIp(ip);
          return own?.family === hop.family && own.value === hop.value;
        })
      );
      if (!machine) {
        return {
          error: `line ${index + 1}: the next hop of a pod route is no machine's internal IP ` +
            "in the inventory",
        };
      }
      const entry = byMachine.get(machine.name) ?? { cidrs: [], nextHops: [] };
      entry.cidrs.push(route[1]!);
      if (!entry.nextHops.includes(nextHop)) entry.nextHops.push(nextHop);
      byMachine.set(machine.name, entry);
    }
  }
  const scheme = config.cluster.provider;
  const nodes: V1Node[] = [];
  for (const [name, { cidrs, nextHops }] of byMachine) {
    const machine = config.machines.find((m) => m.name === name)!;
    nodes.push({
      metadata: { name },
      spec: { providerID: `${scheme}://${machineId(machine)}`, podCIDRs: cidrs, podCIDR: cidrs[0] },
      status: { addresses: nextHops.map((address) => ({ type: "InternalIP", address })) },
    });
  }
  return { nodes };
}
