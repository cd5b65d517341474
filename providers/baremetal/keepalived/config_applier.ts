/**
 * Writes Keelson's keepalived file and reloads keepalived, failing closed: a text that
 * `keepalived -t` rejects never replaces the file in force (keepalived applies an invalid config
 * partially on reload, e.g. an out-of-range priority silently becomes 100).
 *
 * Steps per apply: skip when the file already holds the text; write a temp file in the same
 * directory (named so a `conf.d/*.conf` include never picks it up); run the check command on it
 * (in the target network namespace when `netns` is set, since the interface check is done
 * where `-t` runs); rename it over the file (atomic); send SIGHUP to the pid in the pid file, or
 * run the configured reload command. Bursts are debounced and coalesced to the latest text. A
 * file written whose reload failed, or that no running keepalived was there to read
 * (`not_running`), is reloaded again by the next apply of the same text (it is not "unchanged"
 * for keepalived until keepalived has read it).
 *
 * @module
 */
import { Counter, type Registry } from "prom-client";
import { type Clock, systemClock, type Timer } from "../../../src/kube/clock.ts";
import { logger } from "../../../src/log/logging.ts";
import { declareOnce } from "../../../src/metrics/registry.ts";
import { installChecked } from "../checked_install.ts";
import { failureReason, runBounded } from "../run_bounded.ts";
import { processComm } from "./process_comm.ts";
import { awaitStageOutcome } from "../await_stage_outcome.ts";
import { sha256Hex } from "../../../src/config/stage_outcome.ts";
import {
  InputFileError,
  PID_FILE,
  readInputFile,
  RENDERED_FILE,
} from "../../../src/files/read_input_file.ts";
import { errorMessage } from "../../../src/log/error_message.ts";

/**
 * Outcome of one apply, also the `result` label of the reload counter: `success` written and
 * keepalived told (SIGHUP sent, or the reload command ran); `not_running` written but nobody told,
 * as no keepalived runs (it reads the file when it starts); `invalid` refused by the check;
 * `error` not applied or not reloaded for another reason; `unchanged` already in force.
 */
export type ApplyOutcome = "success" | "invalid" | "error" | "unchanged" | "not_running";

/** What `KeepalivedApplier.apply` did. */
export interface ApplyResult {
  result: ApplyOutcome;
  /** Whether keepalived was told to reload. */
  reloaded: boolean;
  /** One sentence for logs. */
  message: string;
  /** stderr lines of the check command when it rejected the text. */
  checkOutput?: string[];
}

/** Options of `KeepalivedApplier`. */
export interface KeepalivedApplierOptions {
  /** The file keepalived reads (or includes). */
  configFile: string;
  /** Command that validates a file appended as last argument. @default ["keepalived", "-t", "-f"] */
  checkCommand?: string[];
  /** keepalived's parent pid file; SIGHUP goes to that pid. */
  pidFile: string;
  /** Runs instead of SIGHUP when set (no shell). */
  reloadCommand?: string[];
  /** Run the check with `ip netns exec <netns>` (tests). */
  netns?: string;
  /** Bursts within this window are coalesced to the latest text. @default 200 */
  debounceMs?: number;
  /** Registry of `keelson_keepalived_reloads_total`. */
  registry: Registry;
  /** The pid file's process must have this `comm`, so a stale pid is never signalled. @default "keepalived" */
  processName?: string;
  /** Longest a check or reload command may run. @default 30000 */
  commandTimeoutMs?: number;
  /** Timers of the debounce. @default systemClock() */
  clock?: Clock;
  /**
   * Where the unprivileged agent stages the checked text for the root step
   * (`keelson apply-host-config`), which installs `configFile` and reloads keepalived; unset:
   * this process installs and signals itself (the root step's own applier).
   */
  stagedFile?: string;
  /** How long the root step may take to say what it did with a staged text. @default 10000 */
  installWaitMs?: number;
  /**
   * Reload keepalived even when `configFile` already holds the text (the root step: the agent
   * stages a text again only when keepalived has not been told of it). @default false
   */
  reloadUnchanged?: boolean;
}

const RELOADS_METRIC = "keelson_keepalived_reloads_total";

/** Applies rendered keepalived text: validate, write atomically, reload; debounced. */
export class KeepalivedApplier {
  #options: KeepalivedApplierOptions;
  #reloads: Counter<"result">;
  #log = logger("keepalived", "applier");
  #pendingText: string | undefined;
  #waiters: ((result: ApplyResult) => void)[] = [];
  #timer: Timer | undefined;
  #chain: Promise<void> = Promise.resolve();
  /** The file was written but keepalived was not told: the same text again retries the reload. */
  #reloadOwed = false;
  /** The last outcome and message logged, so a repeated `not_running` is said once. */
  #lastLogged = "";

  /**
   * @param options file paths, commands and the metrics registry
   */
  constructor(options: KeepalivedApplierOptions) {
    this.#options = options;
    this.#reloads = declareOnce(options.registry, RELOADS_METRIC, () =>
      new Counter({
        name: RELOADS_METRIC,
        help: "keepalived config applies by result (success, invalid, error, unchanged, " +
          "not_running: written, but no keepalived runs to reload it).",
        labelNames: ["result"],
        registers: [options.registry],
      }));
  }

  /**
   * Schedules `text` to be applied. Calls within the debounce window share one apply of the
   * latest text, and all of them resolve with its result.
   * @param text the whole file
   * @returns what was done
   */
  apply(text: string): Promise<ApplyResult> {
    this.#pendingText = text;
    const promise = new Promise<ApplyResult>((resolve) => this.#waiters.push(resolve));
    this.#timer ??= (this.#options.clock ?? systemClock()).setTimer(
      () => this.#flush(),
      this.#options.debounceMs ?? 200,
    );
    return promise;
  }

  /** Drops a pending debounced apply (its callers get an "unchanged" result). */
  close(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    const waiters = this.#waiters.splice(0);
    for (const w of waiters) w({ result: "unchanged", reloaded: false, message: "closed" });
  }

  #flush(): void {
    this.#timer = undefined;
    const text = this.#pendingText ?? "";
    const waiters = this.#waiters.splice(0);
    this.#chain = this.#chain.then(async () => {
      let result: ApplyResult;
      try {
        result = await this.#applyNow(text);
      } catch (error) {
        result = { result: "error", reloaded: false, message: String(error) };
      }
      this.#reloads.inc({ result: result.result });
      // not_running is the normal first apply at boot (keelson starts before keepalived), and
      // is retried every 10 s until keepalived runs: said once
      const key = `${result.result} ${result.message}`;
      const level = result.result === "invalid" || result.result === "error"
        ? "warning"
        : result.result === "not_running" && key === this.#lastLogged
        ? "debug"
        : "info";
      this.#lastLogged = key;
      this.#log[level]("keepalived config {result}: {message}", { ...result });
      for (const w of waiters) w(result);
    });
  }

  async #applyNow(text: string): Promise<ApplyResult> {
    const file = this.#options.configFile;
    const current = await readInputFile(file, RENDERED_FILE).catch(() => undefined);
    if (current === text && this.#options.reloadUnchanged) return await this.#reload(file);
    if (current === text && !this.#reloadOwed) {
      return { result: "unchanged", reloaded: false, message: `${file} already up to date` };
    }
    const staged = this.#options.stagedFile;
    // in force but keepalived not told: reload; staged, the same text again asks the root step
    if (current === text && !staged) return await this.#reload(file);
    const check = await installChecked({
      file: staged ?? file,
      text,
      mode: staged ? 0o640 : 0o644,
      checkCommand: (candidate) => [
        ...(this.#options.netns ? ["ip", "netns", "exec", this.#options.netns] : []),
        ...(this.#options.checkCommand ?? ["keepalived", "-t", "-f"]),
        candidate,
      ],
      timeoutMs: this.#options.commandTimeoutMs ?? 30_000,
    });
    if (check?.timedOut) {
      // a check that never finished says nothing about the file: not "invalid", retry later
      return {
        result: "error",
        reloaded: false,
        message: `Cannot check the keepalived config: the check did not finish within ${
          (this.#options.commandTimeoutMs ?? 30_000) / 1000
        } s; ${file} kept`,
      };
    }
    if (check) {
      const lines = check.stderr.split("\n").map((l) => l.trim()).filter((l) => l !== "");
      for (const line of lines) this.#log.warning("keepalived -t: {line}", { line });
      return {
        result: "invalid",
        reloaded: false,
        message: `Rejected keepalived config: the check exited ${check.code}; ${file} kept`,
        checkOutput: lines,
      };
    }
    if (staged) return await this.#awaitInstall(staged, file, text);
    return await this.#reload(file);
  }

  /** Waits, within `installWaitMs`, for the root step's outcome of the staged text. */
  async #awaitInstall(staged: string, file: string, text: string): Promise<ApplyResult> {
    const waitMs = this.#options.installWaitMs ?? 10_000;
    const ino = (await Deno.stat(staged)).ino ?? -1;
    const done = await awaitStageOutcome(file, { ino, sha256: await sha256Hex(text) }, waitMs);
    const outcome = done?.outcome;
    this.#reloadOwed = outcome?.result !== "installed";
    if (!done || !outcome) {
      return {
        result: "error",
        reloaded: false,
        message: `${staged} staged, but the root step (keelson-apply.service) said nothing of it ` +
          `within ${waitMs / 1000} s; is it running? (journalctl -u keelson-apply)`,
      };
    }
    if (outcome.result === "installed" || outcome.result === "not_running") {
      // not_running: installed, no keepalived to tell; staged again once one starts
      const installed = outcome.result === "installed";
      return {
        result: installed ? "success" : "not_running",
        reloaded: installed,
        message: `root step, ${done.ms} ms after staging: ${outcome.message}`,
      };
    }
    return {
      result: outcome.result === "refused" || outcome.result === "invalid" ? "invalid" : "error",
      reloaded: false,
      message: `root step, ${done.ms} ms after staging, ${outcome.result}: ${outcome.message}`,
    };
  }

  async #reload(file: string): Promise<ApplyResult> {
    const result = await this.#signal(file);
    this.#reloadOwed = result.result === "error" || result.result === "not_running";
    return result;
  }

  async #signal(file: string): Promise<ApplyResult> {
    if (this.#options.reloadCommand) {
      const run = await runBounded(
        this.#options.reloadCommand,
        this.#options.commandTimeoutMs ?? 30_000,
      );
      return run.code === 0 && !run.timedOut
        ? { result: "success", reloaded: true, message: `${file} written, reload command ran` }
        : {
          result: "error",
          reloaded: false,
          message: `${file} written but the reload command ${failureReason(run)}`,
        };
    }
    const pidFile = this.#options.pidFile;
    let pidText: string | undefined;
    try {
      pidText = await readInputFile(pidFile, PID_FILE);
    } catch (error) {
      // only a missing pid file says keepalived is not running; one Keelson cannot read says
      // nothing about keepalived
      if (!(error instanceof InputFileError && error.problem === "not-found")) {
        return {
          result: "error",
          reloaded: false,
          message: `${file} written; not reloaded: cannot read keepalived's pid file ${pidFile}: ` +
            errorMessage(error),
        };
      }
    }
    if (pidText === undefined) {
      // keepalived removes its pid file when it stops: none runs now; it reads the file at start
      return {
        result: "not_running",
        reloaded: false,
        message: `${file} written; not reloaded: keepalived is not running (pid file ${pidFile} ` +
          `does not exist); it reads the file when it starts`,
      };
    }
    const pid = Number(pidText.trim());
    const comm = Number.isInteger(pid) && pid > 1 ? await processComm(pid) : undefined;
    if (comm?.trim() !== (this.#options.processName ?? "keepalived")) {
      return {
        result: "error",
        reloaded: false,
        message: `${file} written; not reloaded because pid file ${pidFile} names ` +
          `${JSON.stringify(pidText.trim())}, which is not a running keepalived`,
      };
    }
    Deno.kill(pid, "SIGHUP");
    return { result: "success", reloaded: true, message: `${file} written, SIGHUP sent to ${pid}` };
  }
}
