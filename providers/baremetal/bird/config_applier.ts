/**
 * Writes Keelson's BIRD file and tells BIRD to re-read it, failing closed: a text that `bird -p`
 * rejects never replaces the file in force.
 *
 * Per apply: when the file already holds the text and the last `configure` succeeded, nothing
 * happens (a no-op `configure` is harmless but a full parse); otherwise the text goes to a temp
 * file in the same directory, is checked with `bird -p -c`, renamed over the file (atomic), and
 * `configure` is sent over the control socket. Reply 0003 (Reconfigured), 0004 (in progress) and
 * 0005 (queued) count as success. When BIRD is not running yet the file stays written and the
 * next apply sends `configure` again. Applies are serialised and coalesced to the latest text.
 *
 * @module
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { declareOnce } from "../../../src/metrics/registry.ts";
import { logger } from "../../../src/log/logging.ts";
import { birdCommand, BirdSocketError } from "./control_socket.ts";
import { installChecked } from "../checked_install.ts";
import { awaitStageOutcome } from "../await_stage_outcome.ts";
import { sha256Hex } from "../../../src/config/stage_outcome.ts";
import { failureReason } from "../run_bounded.ts";
import { readInputFile, RENDERED_FILE } from "../../../src/files/read_input_file.ts";

/** Outcome of one apply, also the `result` label of the configure counter. */
export type BirdApplyOutcome = "success" | "invalid" | "error" | "unchanged";

/** What `BirdApplier.apply` did. */
export interface BirdApplyResult {
  result: BirdApplyOutcome;
  /** Whether BIRD accepted a `configure` of this text. */
  configured: boolean;
  /** One sentence for logs. */
  message: string;
  /** Output of the check command when it rejected the text. */
  checkOutput?: string[];
}

/** Options of `BirdApplier`. */
export interface BirdApplierOptions {
  /** The file BIRD was started with (`bird -c`). */
  configFile: string;
  /** BIRD's control socket. */
  socket: string;
  /** Validates a file appended as last argument. @default ["bird", "-p", "-c"] */
  checkCommand?: string[];
  /** Registry of `keelson_bgp_configure_total` and `keelson_bgp_last_configure_success`. */
  registry: Registry;
  /** Longest the check command or a socket command may take. @default 30000 */
  commandTimeoutMs?: number;
  /** File mode of the written file (BIRD reads it as user bird). @default 0o640 */
  mode?: number;
  /**
   * Where the unprivileged agent stages the checked text for the root step
   * (`keelson apply-host-config`), which installs `configFile` and sends `configure`; unset:
   * this process installs and configures itself (the root step's own applier).
   */
  stagedFile?: string;
  /** How long a staged text may take to appear in `configFile`. @default 10000 */
  installWaitMs?: number;
}

const CONFIGURE_METRIC = "keelson_bgp_configure_total";
const LAST_METRIC = "keelson_bgp_last_configure_success";

/** Applies rendered BIRD text: validate, write atomically, `configure` only on change. */
export class BirdApplier {
  #options: BirdApplierOptions;
  #counter: Counter<"result">;
  #last: Gauge;
  #log = logger("bird", "applier");
  #chain: Promise<unknown> = Promise.resolve();
  #pending: { text: string; waiters: ((r: BirdApplyResult) => void)[] } | undefined;
  #configuredText: string | undefined;

  /** @param options file, socket, check command and registry */
  constructor(options: BirdApplierOptions) {
    this.#options = options;
    this.#counter = declareOnce(options.registry, CONFIGURE_METRIC, () =>
      new Counter({
        name: CONFIGURE_METRIC,
        help: "BIRD config applies by result (success, invalid, error, unchanged).",
        labelNames: ["result"],
        registers: [options.registry],
      }));
    this.#last = declareOnce(options.registry, LAST_METRIC, () =>
      new Gauge({
        name: LAST_METRIC,
        help: "1 when the last BIRD configure (or check) succeeded, 0 when it failed.",
        registers: [options.registry],
      }));
  }

  /** The text BIRD last accepted through `configure`, if any. */
  get configuredText(): string | undefined {
    return this.#configuredText;
  }

  /**
   * Applies `text`. Calls while an apply runs share the next apply of the latest text.
   * @param text the whole file
   * @returns what was done
   */
  apply(text: string): Promise<BirdApplyResult> {
    if (this.#pending) {
      this.#pending.text = text;
      return new Promise((resolve) => this.#pending!.waiters.push(resolve));
    }
    const pending = { text, waiters: [] as ((r: BirdApplyResult) => void)[] };
    this.#pending = pending;
    const promise = new Promise<BirdApplyResult>((resolve) => pending.waiters.push(resolve));
    this.#chain = this.#chain.then(async () => {
      this.#pending = undefined;
      let result: BirdApplyResult;
      try {
        result = await this.#applyNow(pending.text);
      } catch (error) {
        result = { result: "error", configured: false, message: String(error) };
      }
      this.#counter.inc({ result: result.result });
      if (result.result !== "unchanged") this.#last.set(result.result === "success" ? 1 : 0);
      const level = result.result === "success" || result.result === "unchanged"
        ? "info"
        : "warning";
      this.#log[level]("BIRD config {result}: {message}", { ...result });
      for (const w of pending.waiters) w(result);
    });
    return promise;
  }

  async #applyNow(text: string): Promise<BirdApplyResult> {
    const file = this.#options.configFile;
    const current = await readInputFile(file, RENDERED_FILE).catch(() => undefined);
    if (current === text && this.#configuredText === text) {
      return { result: "unchanged", configured: true, message: `${file} already in force` };
    }
    const staged = this.#options.stagedFile;
    // staged, a text in force but not configured is staged again: the root step configures it
    if (current !== text || staged) {
      const check = await installChecked({
        file: staged ?? file,
        text,
        mode: this.#options.mode ?? 0o640,
        checkCommand: (candidate) => [
          ...(this.#options.checkCommand ?? ["bird", "-p", "-c"]),
          candidate,
        ],
        timeoutMs: this.#options.commandTimeoutMs ?? 30_000,
      });
      if (check) {
        const output = check.stderr + check.stdout;
        const lines = output.split("\n").map((l) => l.trim()).filter((l) => l !== "");
        return {
          result: check.timedOut ? "error" : "invalid",
          configured: false,
          message: check.timedOut
            ? `Cannot check the BIRD config in time; ${file} kept`
            : `Rejected BIRD config (check ${failureReason(check)}); ` +
              `${file} kept`,
          checkOutput: lines,
        };
      }
    }
    if (staged) return await this.#awaitInstall(staged, file, text);
    return await this.#configure(file, text);
  }

  /** Waits, within `installWaitMs`, for the root step's outcome of the staged text. */
  async #awaitInstall(staged: string, file: string, text: string): Promise<BirdApplyResult> {
    const waitMs = this.#options.installWaitMs ?? 10_000;
    const ino = (await Deno.stat(staged)).ino ?? -1;
    const done = await awaitStageOutcome(file, { ino, sha256: await sha256Hex(text) }, waitMs);
    const outcome = done?.outcome;
    const configured = outcome?.result === "installed";
    this.#configuredText = configured ? text : undefined;
    if (!done || !outcome) {
      return {
        result: "error",
        configured: false,
        message: `${staged} staged, but the root step (keelson-apply.service) said nothing of it ` +
          `within ${waitMs / 1000} s; is it running? (journalctl -u keelson-apply)`,
      };
    }
    return {
      result: configured
        ? "success"
        : outcome.result === "refused" || outcome.result === "invalid"
        ? "invalid"
        : "error",
      configured,
      message:
        `root step, ${done.ms} ms after staging${configured ? "" : `, ${outcome.result}`}: ` +
        outcome.message,
    };
  }

  async #configure(file: string, text: string): Promise<BirdApplyResult> {
    try {
      const reply = await birdCommand(
        this.#options.socket,
        "configure",
        this.#options.commandTimeoutMs ?? 30_000,
      );
      if (reply.code === 3 || reply.code === 4 || reply.code === 5) {
        this.#configuredText = text;
        const words = reply.lines.at(-1)?.text ?? "";
        return { result: "success", configured: true, message: `${file} written; BIRD: ${words}` };
      }
      this.#configuredText = undefined;
      return {
        result: "error",
        configured: false,
        message: `${file} written but BIRD refused configure (${reply.code}): ` +
          reply.lines.map((l) => l.text).join(" | "),
      };
    } catch (error) {
      this.#configuredText = undefined;
      const reason = error instanceof BirdSocketError ? error.message : String(error);
      return {
        result: "error",
        configured: false,
        message: `${file} written; BIRD not told (${reason}); it reads the file when it starts`,
      };
    }
  }
}
