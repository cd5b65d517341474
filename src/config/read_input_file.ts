/**
 * Reading a file named on the command line (`--config`, `--state`): only a regular file, and only
 * up to a size cap, so `/dev/zero` cannot fill memory and a FIFO cannot block forever.
 *
 * @module
 */

/** The largest inventory or snapshot read: far above any real one (100k pool entries ≈ 3 MiB). */
export const MAX_INPUT_BYTES = 64 * 1024 * 1024;

/**
 * Reads a regular file of at most `maxBytes` as UTF-8 text.
 * @param path the file
 * @param maxBytes the cap. @default MAX_INPUT_BYTES
 * @returns the text
 * @throws {Error} with a sentence (no path; callers name the file): not found, not a regular
 *   file (directory, FIFO, device), or larger than the cap
 */
export async function readInputFile(path: string, maxBytes = MAX_INPUT_BYTES): Promise<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    throw new Error(osReason(error), { cause: error });
  }
  if (info.isDirectory) throw new Error("is a directory");
  if (!info.isFile) {
    throw new Error(
      "is not a regular file (a FIFO, socket or device is never read: it may never end)",
    );
  }
  if (info.size > maxBytes) throw new Error(tooLarge(info.size, maxBytes));
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    throw new Error(osReason(error), { cause: error });
  }
  try {
    // read at most cap + 1 bytes: the file may grow between stat and read
    const buffer = new Uint8Array(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = await file.read(buffer.subarray(length));
      if (n === null) break;
      length += n;
    }
    if (length > maxBytes) throw new Error(tooLarge(length, maxBytes));
    return new TextDecoder().decode(buffer.subarray(0, length));
  } finally {
    file.close();
  }
}

function tooLarge(size: number, maxBytes: number): string {
  return `is larger than ${maxBytes / (1024 * 1024)} MiB (${size} bytes or more); ` +
    "an inventory or cluster snapshot is far smaller";
}

/** "No such file or directory (os error 2): stat '/x'" -> "no such file or directory (os error 2)" */
export function osReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const reason = error.message.replace(/\): .*$/s, ")").trim();
  return reason.charAt(0).toLowerCase() + reason.slice(1);
}
