/**
 * One host's BIRD file from its inputs: `birdHostFile` is the one pipeline the announcer applies
 * (inputs read from its caches) and `keelson render bird` prints (inputs read from a snapshot),
 * gating included (`serving_hold.ts`): a machine not `active`, a Node not Ready, a drain, an
 * `externalTrafficPolicy: Local` Service without a ready endpoint on this host. Also the reader of
 * the VIPs a file already on disk announces (kept until the caches sync); the Nodes' pod CIDRs
 * are judged by `decide_pod_routes.ts`.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../src/config/types.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import { objectKey } from "../../../src/kube/ports.ts";
import { ingressIps } from "../ipam/status_holdings.ts";
import { addressOwner } from "../ipam/address_owner.ts";
import { type BirdModel, type BirdModelInput, buildBirdModel } from "./model.ts";
import { renderBirdConfig } from "./render.ts";
import { type ServingHold, servingHold } from "../serving_hold.ts";

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

/** The inputs of one host's BIRD file, wherever they were read from. */
export interface BirdHostInputs {
  config: Config;
  /** This machine's name (= its Node name). */
  host: string;
  /** Every Service, once the caches have synced; absent: `fileVips` are announced. */
  services?: readonly V1Service[];
  /** The Service VIPs of the file BIRD started with, announced until the caches sync. */
  fileVips?: readonly string[];
  /** Every Node whose pod CIDRs are announced; empty while unknown or pod routes are off. */
  nodes: readonly V1Node[];
  /**
   * Node names of a Service's ready endpoints (`src/kube/endpoint_nodes.ts`); absent, or undefined for
   * a Service: unknown, so an `externalTrafficPolicy: Local` Service is announced as a Cluster one.
   */
  endpointNodeNames?: (service: V1Service) => string[] | undefined;
  /** This host's Node is Ready, or not known (`nodeIsReady` in `serving_hold.ts`). */
  nodeReady: boolean;
  /** Stopping: every VIP withdrawn, sessions kept. @default false */
  draining?: boolean;
  /** `[bgp]` left the configuration at a reload: nothing is announced. @default false */
  removed?: boolean;
  /** The local kube-apiserver answers /readyz. */
  controlPlaneHealthy: boolean;
  /** Passwords by `password_file`. */
  passwords?: ReadonlyMap<string, string>;
}

/** A Service VIP this host does not announce although the Service is Keelson's. */
export interface VipNotHere {
  /** `namespace/name`. */
  service: string;
  value: string;
  reason: string;
}

/** One host's BIRD file, and why VIPs are left out of it. */
export interface BirdHostFile extends RenderedBird {
  /**
   * Why this host announces no Service VIP (and whether no control-plane VIP either,
   * `serving_hold.ts`); absent when it announces them.
   */
  withheld?: ServingHold;
  /** `externalTrafficPolicy: Local` VIPs without a ready endpoint on this host. */
  notHere: VipNotHere[];
}

/**
 * One host's BIRD file from its inputs: the one pipeline of the announcer and of
 * `keelson render bird`. Pure.
 * @param input what the host knows
 * @returns the text with what was left out, or `{ error }` naming the host and what is missing
 */
export function birdHostFile(input: BirdHostInputs): BirdHostFile | { error: string } {
  const { config, host } = input;
  const hold = input.removed
    ? { reason: "[bgp] is no longer in the configuration for this host", controlPlane: true }
    : servingHold(config, host, { nodeReady: input.nodeReady, draining: input.draining ?? false });
  const chosen = input.services
    ? birdServiceVips(config, host, input.services, input.endpointNodeNames)
    : { vips: [...(input.fileVips ?? [])], notHere: [] };
  const rendered = renderHostBird({
    config,
    host,
    serviceVips: input.removed ? [] : chosen.vips,
    nodes: input.removed ? [] : input.nodes,
    announceServices: hold === undefined,
    controlPlaneHealthy: hold?.controlPlane !== true && input.controlPlaneHealthy,
    ...(input.passwords ? { passwords: input.passwords } : {}),
  });
  if ("error" in rendered) return rendered;
  return {
    ...rendered,
    ...(hold !== undefined ? { withheld: hold } : {}),
    notHere: hold === undefined ? chosen.notHere : [],
  };
}

/**
 * The ingress addresses of the Services Keelson handles that lie in `announce = "bgp"` pools,
 * sorted and unique; an `externalTrafficPolicy: Local` Service's only where one of its ready
 * endpoints runs on `host` (kube-proxy drops Local traffic on a Node without one).
 * @param config the inventory
 * @param host this host's Node name
 * @param services every Service
 * @param endpointNodeNames where each Service's ready endpoints run; undefined: unknown
 * @returns the VIPs to announce and the Local ones left out
 */
export function birdServiceVips(
  config: Config,
  host: string,
  services: readonly V1Service[],
  endpointNodeNames?: (service: V1Service) => string[] | undefined,
): { vips: string[]; notHere: VipNotHere[] } {
  const vips = new Set<string>();
  const notHere: VipNotHere[] = [];
  for (const service of services) {
    if (!handlesService(config, service)) continue;
    const ips = ingressIps(service).filter((ip) => addressOwner(config, ip)?.announce === "bgp");
    if (ips.length === 0) continue;
    if (service.spec?.externalTrafficPolicy === "Local") {
      const nodes = endpointNodeNames?.(service);
      // unknown endpoints (no slice cache): no verdict, announce as for Cluster
      if (nodes !== undefined && !nodes.includes(host)) {
        for (const value of ips) {
          notHere.push({
            service: objectKey(service),
            value,
            reason: `externalTrafficPolicy is Local and no ready endpoint runs on "${host}"`,
          });
        }
        continue;
      }
    }
    for (const ip of ips) vips.add(ip);
  }
  return { vips: [...vips].sort(), notHere };
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
