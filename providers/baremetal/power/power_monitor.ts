/**
 * Machine power as this process observes it: one polling loop per machine with a `[machines.bmc]`
 * table, run while this process leads (the leader's lifecycle controller is the only reader of
 * `instanceShutdown`; polling from every host would multiply each BMC's load by the number of
 * control-plane hosts). Each loop asks its BMC every `poll_interval` and keeps a
 * `PowerObservation` by this process's clock: `sinceMs` restarts at every change of state, so a
 * flapping power state never looks settled.
 *
 * A machine counts as powered off (`confirmedOff`) only when its BMC answered exactly "Off" twice
 * in a row, the latest answer no older than about three intervals (`src/cloud/power_confirmation.ts`,
 * the rule every reader of an observation uses): one stray answer, a flapping state or a stalled
 * loop never shuts a machine down.
 *
 * Listeners (`onChange`) are told of every change a decision can read: a new state, a BMC that
 * starts or stops answering, an Off answered a second time (confirmed), a machine no longer
 * polled. Another answer of the same state tells nothing.
 *
 * @module
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { MachinePower, PowerObservation } from "../../../src/cloud/provider.ts";
import { offConfirmation } from "../../../src/cloud/power_confirmation.ts";
import {
  BmcCredentialError,
  type BmcCredentials,
  readBmcCredentials,
} from "../../../src/config/bmc_credentials.ts";
import type { Config, Machine } from "../../../src/config/types.ts";
import { machineId } from "../../../src/config/types.ts";
import { declareOnce } from "../../../src/metrics/registry.ts";
import { logger } from "../../../src/log/logging.ts";
import { errorMessage } from "../../../src/log/error_message.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import { type Clock, systemClock } from "../../../src/kube/clock.ts";
import { delay } from "../../../src/kube/delay.ts";
import {
  type PowerReading,
  REDFISH_FAILURES,
  RedfishClient,
  RedfishError,
  type RedfishFailure,
} from "./redfish_client.ts";

const log = logger("provider", "power");

/** How long credentials read from their files are used before they are read again. */
const CREDENTIALS_MAX_AGE_MS = 60_000;

/** What the monitor knows of one machine. */
interface Tracked {
  observation: PowerObservation;
  /** Valid answers in a row with the current state. */
  streak: number;
}

/** The BMC metrics (declared when the provider is built, on every host). */
export interface PowerMetrics {
  up: Gauge<"machine">;
  state: Gauge<"machine" | "state">;
  errors: Counter<"machine" | "reason">;
}

/**
 * Declares the BMC metric families (no series until a machine is polled).
 * @param registry the process's registry
 * @returns the metrics
 */
export function declarePowerMetrics(registry: Registry): PowerMetrics {
  return {
    up: declareOnce(registry, "keelson_bmc_up", () =>
      new Gauge({
        name: "keelson_bmc_up",
        help: "1 when the machine's BMC gave a valid Redfish answer to the last request of the " +
          "leader, 0 when it did not; no series on hosts that do not lead.",
        labelNames: ["machine"],
        registers: [registry],
      })),
    state: declareOnce(registry, "keelson_bmc_power_state", () =>
      new Gauge({
        name: "keelson_bmc_power_state",
        help: "1 for the machine's power state as its BMC last reported it (on, off, unknown).",
        labelNames: ["machine", "state"],
        registers: [registry],
      })),
    errors: declareOnce(registry, "keelson_bmc_request_errors_total", () =>
      new Counter({
        name: "keelson_bmc_request_errors_total",
        help: "Requests to a machine's BMC that gave no usable answer, by reason (" +
          `${REDFISH_FAILURES.join(", ")}; identity: the system reports another machine's ` +
          "serial number or asset tag; unsafe_path: the BMC named a path outside the system).",
        labelNames: ["machine", "reason"],
        registers: [registry],
      })),
  };
}

/** Options of `PowerMonitor`. */
export interface PowerMonitorOptions {
  /** The configuration in force. */
  config: () => Config;
  /** The metrics. */
  metrics: PowerMetrics;
  /** This process's clock (ms since the epoch) and the polling loops' timers. @default system */
  clock?: Clock;
  /**
   * Reads one machine's power (tests: a scripted BMC). @default its credentials, then Redfish
   * @throws {RedfishError} or {BmcCredentialError} when there is no usable answer
   */
  readPower?: (machine: Machine, signal: AbortSignal) => Promise<PowerReading>;
  /**
   * Told once per distinct message when a machine's BMC system cannot be proven to be the
   * machine's (`REFUSED_TARGET_FAILURES`): for a Warning Event on its Node.
   */
  onRefused?: (machine: Machine, reason: RedfishFailure, message: string) => void;
}

/**
 * Failures that no retry of the same request fixes: the BMC's system is not provably the
 * machine's (another identity, several or no candidates, a path outside the system).
 */
export const REFUSED_TARGET_FAILURES: ReadonlySet<RedfishFailure> = new Set([
  "identity",
  "no_system",
  "unsafe_path",
]);

/** Polls every configured BMC while started; answers from what it saw. */
export class PowerMonitor {
  readonly #config: () => Config;
  readonly #metrics: PowerMetrics;
  readonly #clock: Clock;
  readonly #readPower: PowerMonitorOptions["readPower"];
  readonly #onRefused: PowerMonitorOptions["onRefused"];
  readonly #tracked = new Map<string, Tracked>();
  /**
   * Running loops by machine name, with the settings they were started with and their client
   * (ForceOff goes through it: the system it discovered and judged).
   */
  readonly #loops = new Map<
    string,
    { key: string; stop: AbortController; client: RedfishClient }
  >();
  #signal: AbortSignal | undefined;
  readonly #listeners = new Set<(machine: string) => void>();

  /** @param options the configuration, metrics and clock */
  constructor(options: PowerMonitorOptions) {
    this.#config = options.config;
    this.#metrics = options.metrics;
    this.#clock = options.clock ?? systemClock();
    this.#readPower = options.readPower;
    this.#onRefused = options.onRefused;
  }

  /**
   * Starts polling until `signal` aborts (a term of leadership); what was observed is forgotten
   * then, so a later term starts from "unknown".
   * @param signal the end of the term
   */
  start(signal: AbortSignal): void {
    this.#signal = signal;
    this.sync();
    signal.addEventListener("abort", () => {
      for (const loop of this.#loops.values()) loop.stop.abort();
      this.#loops.clear();
      this.#tracked.clear();
      this.#metrics.up.reset();
      this.#metrics.state.reset();
      this.#signal = undefined;
    }, { once: true });
  }

  /**
   * Tells `listener` the machine's name whenever its observation changes (see the module note).
   * @param listener called synchronously; it should only note the change
   * @returns stops telling
   */
  onChange(listener: (machine: string) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  #tell(machine: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(machine);
      } catch (error) {
        log.error("A power change listener failed: {error}", { error: errorMessage(error) });
      }
    }
  }

  /** Starts, restarts or stops loops to match the configuration (after a reload). */
  sync(): void {
    const signal = this.#signal;
    if (signal === undefined || signal.aborted) return;
    const wanted = new Map<string, Machine>();
    for (const machine of this.#config().machines) {
      if (machine.bmc !== undefined) wanted.set(machine.name, machine);
    }
    for (const [name, loop] of this.#loops) {
      const machine = wanted.get(name);
      if (machine === undefined || settingsKey(machine) !== loop.key) {
        loop.stop.abort();
        this.#loops.delete(name);
        this.#tracked.delete(name);
        this.#metrics.up.remove({ machine: name });
        for (const state of ["on", "off", "unknown"]) {
          this.#metrics.state.remove({ machine: name, state });
        }
        this.#tell(name);
      }
    }
    for (const [name, machine] of wanted) {
      if (this.#loops.has(name)) continue;
      const stop = new AbortController();
      const client = clientOf(machine);
      this.#loops.set(name, { key: settingsKey(machine), stop, client });
      this.#poll(machine, client, AbortSignal.any([signal, stop.signal])).catch((error) =>
        log.error("Power polling of machine {machine} stopped: {error}", {
          machine: name,
          error: errorMessage(error),
        })
      );
    }
  }

  /**
   * The machine's power as last observed, or null when it has no BMC configured.
   * @param name the machine's name
   * @returns the observation; `unknown` before the first answer or while not leading
   */
  observation(name: string): PowerObservation | null {
    const machine = this.#config().machines.find((m) => m.name === name);
    if (machine?.bmc === undefined) return null;
    const tracked = this.#tracked.get(name);
    if (tracked) return { ...tracked.observation };
    return {
      state: "unknown",
      sinceMs: this.#clock.now(),
      detail: this.#signal ? "not asked yet" : "not polled on this host (only the leader polls)",
    };
  }

  /**
   * Every machine's power as polled now (none while not leading), sorted by machine.
   * @returns the observations
   */
  observed(): MachinePower[] {
    return [...this.#tracked.entries()]
      .sort(([a], [b]) => compareCodeUnits(a, b))
      .map(([machine, { observation }]) => ({ machine, observation: { ...observation } }));
  }

  /**
   * Whether the machine's BMC reported exactly "Off" twice in a row, the latest recently.
   * @param machine the inventory entry
   * @returns true only then
   */
  confirmedOff(machine: Machine): boolean {
    const bmc = machine.bmc;
    const tracked = this.#tracked.get(machine.name);
    if (bmc === undefined || tracked === undefined) return false;
    // a second Off answer (any later one: the polls are an interval apart), the latest answered
    // within about three intervals
    return offConfirmation(tracked.observation, this.#clock.now(), {
      confirmOffMs: 1,
      maxAnswerAgeMs: 3 * bmc.poll_interval.ms + bmc.timeout.ms,
    }).confirmed;
  }

  /**
   * Sends ForceOff to the machine's BMC, through its polling loop's client when it runs with the
   * same settings (the system it found), else a new one; either reads and judges the system again
   * first.
   * @param machine the inventory entry (with a `bmc` table)
   * @param signal aborts the request
   * @throws {RedfishError} or {BmcCredentialError} when it could not be sent or was refused
   */
  async forceOff(machine: Machine, signal: AbortSignal): Promise<void> {
    const bmc = machine.bmc!;
    const credentials = await readBmcCredentials(bmc);
    const loop = this.#loops.get(machine.name);
    const client = loop?.key === settingsKey(machine) ? loop.client : clientOf(machine);
    await client.forceOff(credentials, signal);
  }

  async #poll(machine: Machine, client: RedfishClient, signal: AbortSignal): Promise<void> {
    const bmc = machine.bmc!;
    /** The last refusal told (`onRefused`), so one cause is told once. */
    let refused: string | undefined;
    // the credential files are read again after a minute or after any failure (rotated)
    let credentials: { value: BmcCredentials; readAtMs: number } | undefined;
    const read = this.#readPower ?? (async (_: Machine, s: AbortSignal) => {
      const now = this.#clock.now();
      if (credentials === undefined || now - credentials.readAtMs > CREDENTIALS_MAX_AGE_MS) {
        credentials = { value: await readBmcCredentials(bmc), readAtMs: now };
      }
      return await client.readPower(credentials.value, s);
    });
    while (!signal.aborted) {
      try {
        const reading = await read(machine, signal);
        this.#record(machine.name, reading.state, reading.detail, true);
        refused = undefined;
      } catch (error) {
        credentials = undefined;
        if (signal.aborted) break;
        const reason = error instanceof RedfishError
          ? error.reason
          : error instanceof BmcCredentialError
          ? "credentials"
          : "unreachable";
        this.#metrics.errors.inc({ machine: machine.name, reason });
        // the reason leads the detail, so status and the heartbeat show it however it is cut
        const detail = REFUSED_TARGET_FAILURES.has(reason)
          ? `${reason}: ${errorMessage(error)}`
          : errorMessage(error);
        this.#record(machine.name, "unknown", detail, false);
        if (REFUSED_TARGET_FAILURES.has(reason) && refused !== detail) {
          refused = detail;
          this.#onRefused?.(machine, reason, errorMessage(error));
        }
      }
      await delay(bmc.poll_interval.ms, signal, this.#clock);
    }
  }

  #record(name: string, state: PowerObservation["state"], detail: string, answered: boolean): void {
    const now = this.#clock.now();
    const previous = this.#tracked.get(name);
    const changed = previous === undefined || previous.observation.state !== state;
    const observation: PowerObservation = {
      state,
      sinceMs: changed ? now : previous.observation.sinceMs,
      detail,
    };
    const answeredAt = answered ? now : previous?.observation.answeredAtMs;
    if (answeredAt !== undefined) observation.answeredAtMs = answeredAt;
    const streak = answered ? (changed ? 1 : (previous?.streak ?? 0) + 1) : 0;
    // what a decision reads: the state, whether it answers, a second answer of the same state
    const told = changed || (previous.observation.answeredAtMs !== answeredAt &&
      (previous.streak === 0 || streak === 2)) ||
      (previous.streak > 0 && streak === 0);
    this.#tracked.set(name, { observation, streak });
    this.#metrics.up.set({ machine: name }, answered ? 1 : 0);
    for (const s of ["on", "off", "unknown"] as const) {
      this.#metrics.state.set({ machine: name, state: s }, s === state ? 1 : 0);
    }
    if (changed) {
      log.info("Machine {machine} power: {state} ({detail})", { machine: name, state, detail });
    }
    if (told) this.#tell(name);
  }
}

function clientOf(machine: Machine): RedfishClient {
  const bmc = machine.bmc!;
  return new RedfishClient({
    endpoint: bmc.endpoint,
    ...(bmc.system !== undefined ? { system: bmc.system } : {}),
    serial: machineId(machine),
    ...(machine.id === undefined ? { serialIsName: true } : {}),
    timeoutMs: bmc.timeout.ms,
    ...(bmc.certificate_sha256 !== undefined ? { certificateSha256: bmc.certificate_sha256 } : {}),
  });
}

/** What makes a loop restart when a reload changes it. */
function settingsKey(machine: Machine): string {
  const bmc = machine.bmc!;
  return JSON.stringify([
    machineId(machine),
    bmc.endpoint,
    bmc.system ?? "",
    bmc.username_file,
    bmc.password_file,
    bmc.ca_file ?? "",
    bmc.certificate_sha256 ?? "",
    bmc.poll_interval.ms,
    bmc.timeout.ms,
  ]);
}
