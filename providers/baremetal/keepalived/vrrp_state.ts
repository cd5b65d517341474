/**
 * This host's own data plane: the VRRP state of each keepalived instance (from keepalived's
 * notify FIFO) and the VIPs actually present on the interface (from netlink). Exports
 * `keelson_vrrp_instance_state{instance,state}` and `keelson_vip_served{vip,service}` and tells
 * listeners (the heartbeat) when anything changed.
 *
 * The addresses are re-read at once after each FIFO event (and shortly after, since keepalived
 * adds the VIPs just after it reports MASTER), and every `pollMs` anyway: a VIP left behind by a
 * killed keepalived, or removed by hand, shows up within one period. A VIP the file no longer has
 * (a Service deleted, this host out of VRRP) is still reported while it stays on the interface:
 * the host does serve it until keepalived has removed it, so the status shows a duplicate rather
 * than hiding it.
 *
 * A state is reported only as keepalived said it through the FIFO it holds now: an instance with
 * no FIFO line (Keelson restarted after keepalived, keepalived never loaded it, or no FIFO) is
 * MASTER when this host holds every VIP of it and UNKNOWN otherwise, never a guessed BACKUP. When
 * the FIFO is gone (keepalived deletes it when it stops, `notify_fifo.ts`, or runs a file without
 * it) the states it reported are forgotten: a keepalived starting again reports each afresh.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { declareOnce } from "../../../src/metrics/registry.ts";
import type { AnnouncingInstance, InstanceRole } from "../../../src/cloud/host_data_plane.ts";
import { Wakeable } from "../../../src/kube/wakeable_delay.ts";
import { logger } from "../../../src/log/logging.ts";
import { canonicalIp } from "../../../src/net/ip.ts";
import { type NotifyEvent, readNotifyFifo, VRRP_STATES, type VrrpState } from "./notify_fifo.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import { readInputFile, RENDERED_FILE } from "../../../src/files/read_input_file.ts";
import { errorMessage } from "../../../src/log/error_message.ts";
import { controlPlaneInstanceName } from "./model.ts";

/** The instances `model.ts` names for the control-plane VIP. */
const CONTROL_PLANE_INSTANCES = new Set([4, 6].map((f) => controlPlaneInstanceName(f as 4 | 6)));

/**
 * States kept for instance names the rendered file does not hold (yet: keepalived may report an
 * instance of a file written after the last refresh read it). Beyond this, the oldest such state is
 * forgotten: whatever is written to the FIFO, the map stays bounded.
 */
export const MAX_UNRENDERED_STATES = 64;
/** At most one debug line a minute about forgotten states. */
const FORGOTTEN_LOG_MS = 60_000;

/** Metric names (also read by the monitoring tests). */
export const VRRP_INSTANCE_STATE_METRIC = "keelson_vrrp_instance_state";
/** See `VRRP_INSTANCE_STATE_METRIC`. */
export const VIP_SERVED_METRIC = "keelson_vip_served";

/** Options of `VrrpStateTracker`. */
export interface VrrpStateTrackerOptions {
  registry: Registry;
  /** The interface keepalived serves on. */
  interface: () => string;
  /** keepalived's notify FIFO; undefined: states are inferred from the addresses only. */
  fifoPath?: string;
  /** keepalived's file Keelson renders (instance -> VIPs). */
  configFile: () => string;
  /** The Services (`namespace/name`) that use a VIP. */
  servicesOf: (vip: string) => string[];
  /** Reads the interface's addresses. */
  readAddresses: (iface: string) => Promise<string[]>;
  /** Re-read period of the addresses. @default 1000 */
  pollMs?: number;
  /** Current time. @default Date.now */
  now?: () => number;
  /** keepalived opened its FIFO: it (re)started, or reloaded (a new FIFO each time). */
  onKeepalivedStarted?: () => void;
}

/** A VRRP instance's state as keepalived says it, or `UNKNOWN` when it has not said. */
export type TrackedVrrpState = VrrpState | "UNKNOWN";

/** One VRRP instance of this host, in keepalived's words. */
export interface VrrpInstance {
  name: string;
  state: TrackedVrrpState;
  /** keepalived said it through the notify FIFO, or it was inferred from the addresses. */
  source: "fifo" | "addresses";
  /** When it took this state (ISO 8601). */
  since: string;
  /** Its VIPs (held while MASTER). */
  vips: string[];
}

/** This host's VRRP instances and the VIPs on its interface, in keepalived's words. */
export interface VrrpSnapshot {
  instances: VrrpInstance[];
  vips: { ip: string; since: string }[];
}

/** keepalived's words for an instance's state in the contract's (`InstanceRole`). */
const ROLES: Readonly<Record<TrackedVrrpState, InstanceRole>> = {
  MASTER: "holding",
  BACKUP: "standby",
  FAULT: "failed",
  STOP: "stopped",
  UNKNOWN: "unknown",
};

/**
 * The VRRP instances in the provider contract's words (`src/cloud/host_data_plane.ts`).
 * @param instances the tracker's instances
 * @param announcer the announcer running them, as the provider names it
 * @returns each with its role and where it was learned
 */
export function announcingInstances(
  instances: readonly VrrpInstance[],
  announcer: string,
): AnnouncingInstance[] {
  return instances.map((i) => ({
    announcer,
    name: i.name,
    role: ROLES[i.state],
    observedFrom: i.source === "fifo" ? "daemon" : "addresses",
    since: i.since,
    addresses: i.vips,
    serves: CONTROL_PLANE_INSTANCES.has(i.name) ? "control-plane" : "services",
  }));
}

/** Tracks this host's VRRP states and served VIPs. */
export class VrrpStateTracker {
  #options: VrrpStateTrackerOptions;
  #log = logger("keepalived", "data-plane");
  #fifoStates = new Map<string, { state: TrackedVrrpState; since: string }>();
  #instanceVips = new Map<string, string[]>();
  #present: string[] = [];
  /** VIPs rendered before, no longer in the file, still on the interface. */
  #lingering = new Set<string>();
  #since = new Map<string, string>();
  #inferredSince = new Map<string, { state: TrackedVrrpState; since: string }>();
  #listeners = new Set<() => void>();
  /** keepalived's FIFO is gone; false while open or not yet looked at. */
  #fifoGone = false;
  #wakeable = new Wakeable();
  #stateGauge: Gauge<"instance" | "state">;
  #servedGauge: Gauge<"vip" | "service">;
  #lastKey = "";
  #warned = "";
  /** States forgotten since the last debug line about them, and when that was. */
  #forgotten = { count: 0, loggedAt: -Infinity };

  /** @param options registry, interface, FIFO, file, Service lookup, address reader */
  constructor(options: VrrpStateTrackerOptions) {
    this.#options = options;
    this.#stateGauge = declareOnce(options.registry, VRRP_INSTANCE_STATE_METRIC, () =>
      new Gauge({
        name: VRRP_INSTANCE_STATE_METRIC,
        help: "VRRP state of each keepalived instance on this host (1 for the current state).",
        labelNames: ["instance", "state"],
        registers: [options.registry],
      }));
    this.#servedGauge = declareOnce(options.registry, VIP_SERVED_METRIC, () =>
      new Gauge({
        name: VIP_SERVED_METRIC,
        help: "1 when this host serves the VIP (the address is on its interface), else 0.",
        labelNames: ["vip", "service"],
        registers: [options.registry],
      }));
  }

  /** Calls `listener` after every change of the snapshot. @returns unsubscribe */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** @returns how many instance states from the FIFO are kept (bounded; for tests) */
  get fifoStateCount(): number {
    return this.#fifoStates.size;
  }

  /** @returns the VRRP instances and the VIPs on the interface now */
  snapshot(): VrrpSnapshot {
    const now = new Date(this.#now()).toISOString();
    const instances: VrrpInstance[] = [];
    for (const [name, vips] of [...this.#instanceVips].sort(([a], [b]) => compareCodeUnits(a, b))) {
      const known = this.#fifoStates.get(name);
      if (known) {
        instances.push({ name, state: known.state, source: "fifo", since: known.since, vips });
        continue;
      }
      // no FIFO line (Keelson started after keepalived, keepalived never loaded the instance,
      // or no FIFO): holding every VIP means MASTER; not holding them says nothing (UNKNOWN)
      const holds = vips.length > 0 && vips.every((v) => this.#present.includes(v));
      const state: TrackedVrrpState = holds ? "MASTER" : "UNKNOWN";
      const previous = this.#inferredSince.get(name);
      const since = previous?.state === state ? previous.since : now;
      this.#inferredSince.set(name, { state, since });
      instances.push({ name, state, source: "addresses", since, vips });
    }
    const rendered = new Set([...[...this.#instanceVips.values()].flat(), ...this.#lingering]);
    const vips = this.#present.filter((v) => rendered.has(v)).map((ip) => ({
      ip,
      since: this.#since.get(ip) ?? now,
    }));
    return { instances, vips };
  }

  /**
   * Records one FIFO event (exposed for tests; `run` feeds it).
   * @param event the parsed line
   */
  onNotify(event: NotifyEvent): void {
    if (event.kind === "deleted") {
      this.#fifoStates.delete(event.instance);
    } else {
      const previous = this.#fifoStates.get(event.instance);
      if (previous?.state !== event.state) {
        // a flood of names nobody rendered is summed up by #boundUnrendered, not logged per line
        const flooded = !previous && !this.#instanceVips.has(event.instance) &&
          this.#boundUnrendered(1);
        this.#fifoStates.set(event.instance, {
          state: event.state,
          since: new Date(this.#now()).toISOString(),
        });
        if (!flooded) this.#log.info("VRRP instance {instance} is {state}", { ...event });
      }
    }
    this.#wakeable.wake();
  }

  /**
   * Records that keepalived's FIFO is gone: keepalived stopped (or never started, or runs a file
   * without the FIFO), so the states it reported are forgotten (exposed for tests; `run` feeds it).
   */
  onFifoGone(): void {
    if (!this.#fifoGone) {
      this.#log.info(
        "keepalived's notify FIFO {path} does not exist (keepalived is not running, or runs a " +
          "file without it): VRRP states are UNKNOWN until it reports them",
        { path: this.#options.fifoPath ?? "" },
      );
    }
    this.#fifoGone = true;
    this.#fifoStates.clear();
    this.#wakeable.wake();
  }

  /** Records that keepalived's FIFO is open (again): keepalived runs (exposed for tests). */
  onFifoOpen(): void {
    this.#fifoGone = false;
    this.#wakeable.wake();
    this.#options.onKeepalivedStarted?.();
  }

  /**
   * Reads the rendered file and the interface once, updates the metrics and notifies on change.
   * @throws {Error} when the addresses cannot be read
   */
  async refresh(): Promise<void> {
    const text = await readInputFile(this.#options.configFile(), RENDERED_FILE).catch(() => "");
    const before = [...this.#instanceVips.values()].flat();
    const present = await this.#options.readAddresses(this.#options.interface());
    this.#instanceVips = instancesInFile(text);
    this.#boundUnrendered(0);
    for (const name of [...this.#inferredSince.keys()]) {
      if (!this.#instanceVips.has(name)) this.#inferredSince.delete(name);
    }
    const rendered = new Set([...this.#instanceVips.values()].flat());
    this.#lingering = new Set(
      [...before, ...this.#lingering].filter((v) => !rendered.has(v) && present.includes(v)),
    );
    const now = new Date(this.#now()).toISOString();
    for (const ip of present) if (!this.#since.has(ip)) this.#since.set(ip, now);
    for (const ip of [...this.#since.keys()]) if (!present.includes(ip)) this.#since.delete(ip);
    this.#present = present;
    this.#publish();
  }

  /**
   * Reads the FIFO and polls the addresses until `signal` aborts. Never rejects.
   * @param signal stops it
   */
  async run(signal: AbortSignal): Promise<void> {
    const fifo = this.#options.fifoPath
      ? readNotifyFifo({
        path: this.#options.fifoPath,
        onEvent: (event) => this.onNotify(event),
        onOpen: () => this.onFifoOpen(),
        onGone: () => this.onFifoGone(),
        signal,
      })
      : Promise.resolve();
    const pollMs = this.#options.pollMs ?? 1000;
    // after a FIFO event: read at once, then again shortly after (VIPs follow the state line)
    let followUps = 0;
    while (!signal.aborted) {
      try {
        await this.refresh();
        this.#warned = "";
      } catch (error) {
        const message = errorMessage(error);
        if (message !== this.#warned) this.#log.warn("{error}", { error: message });
        this.#warned = message;
      }
      const wait = followUps > 0 ? 150 : pollMs;
      if (followUps > 0) followUps--;
      const woken = await this.#wakeable.wait(wait, signal);
      if (woken) followUps = 3;
    }
    await fifo;
  }

  #publish(): void {
    const snapshot = this.snapshot();
    this.#stateGauge.reset();
    for (const instance of snapshot.instances) {
      for (const state of [...VRRP_STATES, "UNKNOWN"] as const) {
        this.#stateGauge.set({ instance: instance.name, state }, instance.state === state ? 1 : 0);
      }
    }
    this.#servedGauge.reset();
    const served = new Set(snapshot.vips.map((v) => v.ip));
    for (
      const vip of [...new Set([...[...this.#instanceVips.values()].flat(), ...this.#lingering])]
        .sort()
    ) {
      const services = this.#options.servicesOf(vip);
      for (const service of services.length > 0 ? services : [""]) {
        this.#servedGauge.set({ vip, service }, served.has(vip) ? 1 : 0);
      }
    }
    const key = JSON.stringify({
      i: snapshot.instances.map((i) => [i.name, i.state]),
      v: snapshot.vips.map((v) => v.ip),
    });
    if (key === this.#lastKey) return;
    this.#lastKey = key;
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch (error) {
        this.#log.error("Data-plane listener failed: {error}", { error: String(error) });
      }
    }
  }

  /**
   * Forgets the oldest states of names the file does not hold until `room` more fit under
   * `MAX_UNRENDERED_STATES`.
   * @returns whether any was forgotten
   */
  #boundUnrendered(room: number): boolean {
    const unrendered = [...this.#fifoStates.keys()].filter((n) => !this.#instanceVips.has(n));
    const excess = unrendered.length + room - MAX_UNRENDERED_STATES;
    if (excess <= 0) return false;
    // a Map iterates in insertion order: the first are the oldest
    for (const name of unrendered.slice(0, excess)) this.#fifoStates.delete(name);
    this.#forgotten.count += excess;
    const now = this.#now();
    if (now - this.#forgotten.loggedAt >= FORGOTTEN_LOG_MS) {
      this.#log.debug(
        "The notify FIFO named {count} instance(s) Keelson did not render; forgot the oldest " +
          "(at most {max} such states are kept)",
        { count: this.#forgotten.count, max: MAX_UNRENDERED_STATES },
      );
      this.#forgotten = { count: 0, loggedAt: now };
    }
    return true;
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }
}

/**
 * The VRRP instances of a keepalived file and the VIPs of each (listed and excluded). Only
 * address-shaped tokens are kept; anything else of the file is ignored.
 * @param text a keepalived file written by Keelson
 * @returns instance name -> canonical VIPs
 */
export function instancesInFile(text: string): Map<string, string[]> {
  const instances = new Map<string, string[]>();
  let current: string[] | undefined;
  let inAddresses = false;
  for (const line of text.split("\n")) {
    const instance = line.match(/^vrrp_instance ([A-Za-z0-9_]{1,64}) \{$/);
    if (instance) {
      current = [];
      instances.set(instance[1]!, current);
      inAddresses = false;
    } else if (/^ {4}virtual_ipaddress(_excluded)? \{$/.test(line)) {
      inAddresses = current !== undefined;
    } else if (/^ {4}\}$/.test(line)) {
      inAddresses = false;
    } else if (/^\}$/.test(line)) {
      current = undefined;
      inAddresses = false;
    } else if (inAddresses && current) {
      const address = line.match(/^ {8}([0-9A-Fa-f.:]{2,45})\/\d{1,3} dev \S+$/);
      const ip = address ? canonicalIp(address[1]!) : undefined;
      if (ip) current.push(ip);
    }
  }
  return instances;
}
