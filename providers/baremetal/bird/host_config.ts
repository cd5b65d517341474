/**
 * One host's BIRD file from its inputs: what the announcer applies and what `keelson render bird`
 * prints. Also the reader of the VIPs a file already on disk announces (kept until the caches
 * sync); the Nodes' pod CIDRs are judged by `decide_pod_routes.ts`.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../src/config/types.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import { ingressIps } from "../ipam/status_holdings.ts";
import { type BirdModel, type BirdModelInput, buildBirdModel, inBgpPool } from "./model.ts";
import { renderBirdConfig } from "./render.ts";

/** The text of one host's BIRD file, with what was left out. */
export interface RenderedBird {
  text: string;
  model: BirdModel;
  skipped: { value: string; reason: string }[];
}

/**
 * Builds and renders one host's BIRD file. Pure.
 * @param input the configuration, host and dynamic inputs
 * @returns the text, or `{ error }` naming the host and what is missing
 */
export function renderHostBird(input: BirdModelInput): RenderedBird | { error: string } {
  const model = buildBirdModel(input);
  if ("error" in model) return model;
  return { text: renderBirdConfig(model), model, skipped: model.skipped };
}

/**
 * The ingress addresses of the Services Keelson handles that lie in `announce = "bgp"` pools,
 * sorted and unique, whatever their traffic policy (`keelson render bird`; the announcer also
 * applies `externalTrafficPolicy: Local`).
 * @param config the inventory
 * @param services every Service
 */
export function bgpServiceVipsOf(config: Config, services: readonly V1Service[]): string[] {
  const vips = new Set<string>();
  for (const service of services) {
    if (!handlesService(config, service)) continue;
    for (const ip of ingressIps(service)) if (inBgpPool(config, ip)) vips.add(ip);
  }
  return [...vips].sort();
}

/**
 * The Service VIPs a file rendered by Keelson announces (routes of `keelson_vips*` protocols).
 * Only address-shaped tokens are returned; the model parses them again.
 * @param text a BIRD file written by Keelson (anything else yields fewer or no VIPs)
 * @returns the addresses, in file order
 */
export function serviceVipsInBirdFile(text: string): string[] {
  const vips: string[] = [];
  let inVips = false;
  for (const line of text.split("\n")) {
    const start = /^protocol static (\S+) \{$/.exec(line);
    if (start) inVips = /^keelson_vips[46]_p\d{1,4}$/.test(start[1]!);
    else if (line === "}") inVips = false;
    else if (inVips) {
      const route = /^ {2}route ([0-9A-Fa-f.:]{2,45})\/(32|128) blackhole;$/.exec(line);
      if (route) vips.push(route[1]!);
    }
  }
  return vips;
}
