/**
 * Probes the local kube-apiserver and writes keepalived's apiserver-health track file: "0" when
 * healthy, "1" when not. keepalived watches the file (inotify) and puts the control-plane VRRP
 * instance in FAULT on a non-zero value, which hands the VIP to a healthy host in well under a
 * second, without any script run by root keepalived.
 *
 * The probe is one HTTP GET; an answer with status 200 is healthy, anything else (another
 * status, a refused connection, a timeout) is not. With an https URL and no CA file the server
 * certificate is not verified: the target is this host's own apiserver on loopback (only root
 * can bind its port there), `/readyz` is readable without credentials, and the probe must work
 * before any cluster credential exists. Give `caFile` to verify anyway. `http://` URLs are
 * accepted for tests. It needs no Kubernetes client or kubeconfig at all.
 *
 * Hysteresis: the state changes after `rise` consecutive successes or `fall` consecutive
 * failures, and the file is written (atomically) only when the state changes. While a change is
 * being confirmed (the last answer disagrees with the state) the next probe comes after
 * `recheckIntervalMs`, not a whole interval: with the defaults a failing apiserver is declared
 * unhealthy 0.2-1.2 s after it starts failing, instead of 1-2 s, which keeps the control-plane
 * VIP's failover under 2 s including keepalived's part.
 *
 * @module
 */
import http from "node:http";
import https from "node:https";
import { type Clock, systemClock } from "../../../src/kube/clock.ts";
import { errorMessage } from "../../../src/log/error_message.ts";
import { logger } from "../../../src/log/logging.ts";
import { writeTrackFile } from "../track_file_write.ts";
import { PEM_FILE, readInputFile } from "../../../src/files/read_input_file.ts";

/** Options of `ApiserverProbe`. */
export interface ApiserverProbeOptions {
  /** URL probed. @default "https://127.0.0.1:6443/readyz" */
  url?: string;
  /** The track file keepalived watches, e.g. `/run/keelson/apiserver-health`. */
  trackFile: string;
  /** Time between probes. @default 1000 */
  intervalMs?: number;
  /** Time one probe may take. @default 1000 */
  timeoutMs?: number;
  /** Time to the next probe while a change is being confirmed. @default 200 (at most intervalMs) */
  recheckIntervalMs?: number;
  /** Consecutive successes before healthy. @default 2 */
  rise?: number;
  /** Consecutive failures before unhealthy. @default 2 */
  fall?: number;
  /** PEM CA bundle to verify the apiserver's certificate with. */
  caFile?: string;
  /** Replaces the HTTP probe (unit tests). Resolves true when healthy. */
  check?: (signal: AbortSignal) => Promise<boolean>;
  /** Timers between probes. @default systemClock() */
  clock?: Clock;
}

/** Health as the probe last decided it. */
export type ApiserverHealth = "unknown" | "healthy" | "unhealthy";

/** Periodic apiserver probe with rise/fall hysteresis that writes the track file on change. */
export class ApiserverProbe {
  #options: ApiserverProbeOptions;
  #state: ApiserverHealth = "unknown";
  #successes = 0;
  #failures = 0;
  /** The last failed write of the track file, logged once until it changes. */
  #writeProblem: string | undefined;
  /** Why the last failed probe failed, for the log line that says the apiserver is unhealthy. */
  #lastFailure: string | undefined;
  #log = logger("control_plane", "apiserver_probe");

  /** @param options URL, track file, timing and thresholds */
  constructor(options: ApiserverProbeOptions) {
    this.#options = options;
  }

  /** @returns the current decision */
  get state(): ApiserverHealth {
    return this.#state;
  }

  /**
   * Runs one probe and updates the state and file.
   * @param signal aborts the probe
   * @returns the state after this probe
   */
  async tick(signal?: AbortSignal): Promise<ApiserverHealth> {
    const timeout = AbortSignal.timeout(this.#options.timeoutMs ?? 1000);
    const probeSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let ok: boolean;
    try {
      ok = await (this.#options.check ?? ((s) => this.#httpCheck(s)))(probeSignal);
    } catch (error) {
      // e.g. a CA file that cannot be read, or a request refused before it is sent
      this.#lastFailure = errorMessage(error);
      ok = false;
    }
    if (ok) [this.#successes, this.#failures] = [this.#successes + 1, 0];
    else [this.#successes, this.#failures] = [0, this.#failures + 1];
    let next = this.#state;
    if (ok && this.#successes >= (this.#options.rise ?? 2)) next = "healthy";
    if (!ok && this.#failures >= (this.#options.fall ?? 2)) next = "unhealthy";
    if (next !== this.#state) {
      try {
        await writeTrackFile(this.#options.trackFile, next === "healthy" ? "0\n" : "1\n");
        this.#writeProblem = undefined;
      } catch (error) {
        // the state stays as keepalived last read it, so the next probe writes again
        const problem = errorMessage(error);
        if (problem !== this.#writeProblem) {
          this.#log.error(
            "kube-apiserver is {state}, but keepalived is not told: {error}; retrying",
            { state: next, error: problem, file: this.#options.trackFile },
          );
        }
        this.#writeProblem = problem;
        return this.#state;
      }
      if (next === "unhealthy") {
        this.#log.warn("kube-apiserver is now {state} (was {previous}): {reason}; wrote {file}", {
          state: next,
          previous: this.#state,
          reason: this.#lastFailure ?? "no answer",
          file: this.#options.trackFile,
        });
      } else {
        this.#log.info("kube-apiserver is now {state} (was {previous}); wrote {file}", {
          state: next,
          previous: this.#state,
          file: this.#options.trackFile,
        });
      }
      this.#state = next;
    }
    return this.#state;
  }

  /**
   * Probes every interval until `signal` aborts.
   * @param signal stops the loop
   */
  async run(signal: AbortSignal): Promise<void> {
    const clock = this.#options.clock ?? systemClock();
    while (!signal.aborted) {
      await this.tick(signal);
      await new Promise<void>((resolve) => {
        const timer = clock.setTimer(done, this.#nextDelayMs());
        signal.addEventListener("abort", done, { once: true });
        function done(): void {
          timer.cancel();
          signal.removeEventListener("abort", done);
          resolve();
        }
      });
    }
  }

  #nextDelayMs(): number {
    const interval = this.#options.intervalMs ?? 1000;
    const confirming = this.#successes > 0
      ? this.#state !== "healthy"
      : this.#failures > 0 && this.#state !== "unhealthy";
    return confirming ? Math.min(this.#options.recheckIntervalMs ?? 200, interval) : interval;
  }

  async #httpCheck(signal: AbortSignal): Promise<boolean> {
    const url = new URL(this.#options.url ?? "https://127.0.0.1:6443/readyz");
    const ca = this.#options.caFile
      ? await readInputFile(this.#options.caFile, PEM_FILE)
      : undefined;
    const module = url.protocol === "http:" ? http : https;
    return await new Promise<boolean>((resolve) => {
      // an abort ends the wait here, whether or not node:https notices it
      signal.addEventListener("abort", () => {
        this.#lastFailure = `no answer from ${url.href} within the probe's timeout`;
        resolve(false);
      }, { once: true });
      const request = module.request(url, {
        method: "GET",
        agent: false,
        signal,
        ...(url.protocol === "https:" ? (ca ? { ca } : { rejectUnauthorized: false }) : {}),
      }, (response) => {
        response.resume();
        if (response.statusCode !== 200) {
          this.#lastFailure = `${url.href} answered HTTP ${response.statusCode}`;
        }
        resolve(response.statusCode === 200);
      });
      request.on("error", (error) => {
        this.#lastFailure = `${url.href}: ${errorMessage(error)}`;
        resolve(false);
      });
      request.end();
    });
  }
}
