/**
 * Reads a file the unprivileged account staged, as root: only a regular file, never through a
 * symbolic link (the account owns the directory and could link the name to a root-only file),
 * within the size cap and deadline of every file Keelson reads.
 *
 * @module
 */
import { errorMessage } from "../../../src/log/error_message.ts";
import {
  InputFileError,
  readInputFile,
  RENDERED_FILE,
} from "../../../src/files/read_input_file.ts";

/**
 * The staged text, or why there is none to judge.
 * @param path the staged file
 * @returns `{ text, ino }`, `{ missing: true }` when nothing is staged, or `{ error }` (a link, not a
 *   regular file, too large, unreadable)
 */
export async function readStaged(
  path: string,
): Promise<{ text: string; ino: number } | { missing: true } | { error: string }> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { missing: true };
    return { error: `${path}: ${errorMessage(error)}` };
  }
  if (info.isSymlink) return { error: `${path} is a symbolic link; only a regular file is read` };
  if (!info.isFile) return { error: `${path} is not a regular file` };
  let text: string;
  try {
    // readInputFile stats again and refuses what is no longer a regular file (a FIFO swapped in)
    text = await readInputFile(path, RENDERED_FILE);
  } catch (error) {
    if (error instanceof InputFileError && error.problem === "not-found") return { missing: true };
    return { error: `${path} ${errorMessage(error)}` };
  }
  // swapped for a link between the two reads: refuse, the text may be another file's
  const after = await Deno.lstat(path).catch(() => undefined);
  if (!after?.isFile || after.ino !== info.ino || after.dev !== info.dev) {
    return { error: `${path} was replaced while it was read; read again at the next change` };
  }
  return { text, ino: info.ino ?? -1 };
}
