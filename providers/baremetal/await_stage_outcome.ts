/**
 * The agent's side of staging: waits for the root step (`keelson apply-host-config`) to say what
 * it did with the file just staged (`src/config/stage_outcome.ts`), polling the outcome file.
 *
 * @module
 */
import {
  MAX_OUTCOME_BYTES,
  outcomeFile,
  parseStageOutcome,
  type StageOutcome,
} from "../../src/config/stage_outcome.ts";
import { readInputFile } from "../../src/files/read_input_file.ts";

/** How often the outcome file is read while the root step works (a read is a few µs). */
const POLL_MS = 10;

/** The staged file, as the agent staged it. */
export interface StagedVersion {
  /** Its inode right after the rename. */
  ino: number;
  /** SHA-256 (hex) of the text. */
  sha256: string;
}

/**
 * The root step's outcome for `staged`, and how long it took, or undefined when none came within
 * `waitMs`.
 * @param installedFile the file the daemon reads (the outcome file is beside it)
 * @param staged the inode and hash of the staged text
 * @param waitMs the bound
 * @returns the outcome and the milliseconds it took
 */
export async function awaitStageOutcome(
  installedFile: string,
  staged: StagedVersion,
  waitMs: number,
): Promise<{ outcome: StageOutcome; ms: number } | undefined> {
  const file = outcomeFile(installedFile);
  const start = performance.now();
  while (true) {
    const text = await readInputFile(file, { maxBytes: MAX_OUTCOME_BYTES, what: "an outcome file" })
      .catch(() => undefined);
    const outcome = text === undefined ? undefined : parseStageOutcome(text);
    const ms = Math.round(performance.now() - start);
    if (outcome && outcome.ino === staged.ino && outcome.sha256 === staged.sha256) {
      return { outcome, ms };
    }
    if (ms >= waitMs) return undefined;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
