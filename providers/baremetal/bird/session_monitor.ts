/**
 * Reads BIRD's sessions over the control socket every few seconds: `keelson_bgp_session_up{peer}`
 * and `keelson_bgp_routes_exported{peer}` for Prometheus, and the Established set the route
 * provider needs before it reports a Node's routes as created. Polling also ends BIRD 2.0.12's
 * up-to-3 s pause before the first UPDATEs of a fresh session.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { declareOnce } from "../../../src/metrics/registry.ts";
import type { Config } from "../../../src/config/types.ts";
import { delay } from "../../../src/kube/delay.ts";
import { logger } from "../../../src/log/logging.ts";
import { birdCommand, type BirdProtocolState, parseProtocols } from "./control_socket.ts";
import { peerProtocolName } from "./model.ts";

/** Options of `SessionMonitor`. */
export interface SessionMonitorOptions {
  config: () => Config;
  /**
   * The socket that answers `show protocols all` as BIRD's control socket does: for the agent, the
   * root step's read-only relay (`read_only_relay.ts`); read only at start.
   */
  socket: string;
  registry: Registry;
  /** Called after every poll (the per-VIP gauge follows the sessions). */
  afterPoll?: () => void;
  /** Replaces the socket read (tests). */
  read?: (socket: string) => Promise<BirdProtocolState[]>;
}

/** Polls BIRD's protocol states. */
export class SessionMonitor {
  #options: SessionMonitorOptions;
  #up: Gauge<"peer">;
  #exported: Gauge<"peer">;
  #states = new Map<string, BirdProtocolState>();
  /** The peer names the gauges hold a series for. */
  #labelled = new Set<string>();
  #reachable = false;
  #log = logger("bird", "sessions");

  /** @param options config, registry and an optional reader */
  constructor(options: SessionMonitorOptions) {
    this.#options = options;
    const gauge = (name: string, help: string) =>
      declareOnce(
        options.registry,
        name,
        () => new Gauge({ name, help, labelNames: ["peer"], registers: [options.registry] }),
      );
    this.#up = gauge(
      "keelson_bgp_session_up",
      "1 while BIRD's BGP session to the peer (inventory name) is Established, else 0.",
    );
    this.#exported = gauge(
      "keelson_bgp_routes_exported",
      "Routes BIRD exports to the peer (inventory name), all address families.",
    );
  }

  /** Whether the last poll reached BIRD. */
  get reachable(): boolean {
    return this.#reachable;
  }

  /**
   * Whether the session to a `[[bgp.peers]]` entry was Established at the last poll.
   * @param peer the peer's name in the inventory
   */
  established(peer: string): boolean {
    return this.#states.get(peerProtocolName(peer))?.established ?? false;
  }

  /** Reads BIRD once and updates the gauges. */
  async poll(): Promise<void> {
    const config = this.#options.config();
    if (!config.bgp) return;
    let states: BirdProtocolState[];
    try {
      const socket = this.#options.socket;
      states = await (this.#options.read ?? readStates)(socket);
      if (!this.#reachable) {
        this.#log.info("BIRD answers on {socket}", { socket });
      }
      this.#reachable = true;
    } catch (error) {
      if (this.#reachable) {
        this.#log.warn("Cannot read BIRD's sessions: {error}", { error: String(error) });
      }
      this.#reachable = false;
      states = [];
    }
    const next = new Map(states.map((s) => [s.name, s]));
    const labelled = new Set<string>();
    for (const peer of config.bgp.peers) {
      const state = next.get(peerProtocolName(peer.name));
      const before = this.#states.get(peerProtocolName(peer.name));
      if (state && before && state.established !== before.established) {
        this.#log.info("BGP session to {peer} is now {info}", {
          peer: peer.name,
          info: state.info,
        });
      }
      if (!state) {
        this.#up.remove({ peer: peer.name });
        this.#exported.remove({ peer: peer.name });
        continue;
      }
      this.#up.set({ peer: peer.name }, state.established ? 1 : 0);
      this.#exported.set({ peer: peer.name }, state.exported);
      labelled.add(peer.name);
    }
    // a peer a reload removed or renamed: its series would otherwise stay at their last values
    for (const name of this.#labelled) {
      if (labelled.has(name)) continue;
      this.#up.remove({ peer: name });
      this.#exported.remove({ peer: name });
    }
    this.#labelled = labelled;
    this.#states = next;
    this.#options.afterPoll?.();
  }

  /** Polls every `[bgp] status_interval_ms` until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.poll();
      const interval = this.#options.config().bgp?.status_interval_ms ?? 2000;
      await delay(interval, signal);
    }
  }
}

async function readStates(socket: string): Promise<BirdProtocolState[]> {
  return parseProtocols(await birdCommand(socket, "show protocols all", 5000));
}
