/**
 * Writes a keepalived track file Keelson owns (the apiserver health, a Service group's Local
 * traffic): whole or not at all, so keepalived's inotify read never sees half a value.
 *
 * @module
 */
import { dirname } from "node:path";
import { writingHostFile } from "./host_file_error.ts";

/**
 * Writes `text` to `path` through a temporary file and a rename, creating the directory.
 * @param path the track file
 * @param text its value, e.g. `"1\n"`
 * @throws {Error} naming the file and what to do when it cannot be written
 */
export async function writeTrackFile(path: string, text: string): Promise<void> {
  await writingHostFile(dirname(path), () => Deno.mkdir(dirname(path), { recursive: true }));
  const temp = `${path}.${Deno.pid}.tmp`;
  await writingHostFile(temp, () => Deno.writeTextFile(temp, text, { mode: 0o644 }));
  await writingHostFile(path, () => Deno.rename(temp, path));
}
