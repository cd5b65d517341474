/**
 * Waits for the root step (`keelson apply-host-config`) to install a text the unprivileged agent
 * staged: the installed file is readable by the agent, and holding the staged bytes means the
 * root step judged, checked, installed and reloaded it.
 *
 * @module
 */
import { readInputFile, RENDERED_FILE } from "../../src/config/read_input_file.ts";

/** How often the installed file is read while the root step works (a read is a few µs). */
const INSTALL_POLL_MS = 10;

/**
 * Milliseconds until `file` holds `text`, or undefined when it did not within `waitMs`.
 * @param file the installed file
 * @param text the staged text
 * @param waitMs the bound
 * @returns the time it took, rounded
 */
export async function installedWithin(
  file: string,
  text: string,
  waitMs: number,
): Promise<number | undefined> {
  const start = performance.now();
  while (true) {
    const now = await readInputFile(file, RENDERED_FILE).catch(() => undefined);
    const elapsed = performance.now() - start;
    if (now === text) return Math.round(elapsed);
    if (elapsed >= waitMs) return undefined;
    await new Promise((resolve) => setTimeout(resolve, INSTALL_POLL_MS));
  }
}
