/**
 * The Local-traffic files of this host's Service groups (`model.ts`): keepalived follows them
 * through inotify, so a move of endpoints changes a file, never keepalived's configuration.
 *
 * @module
 */
import { errorMessage } from "../../../src/log/error_message.ts";
import { logger } from "../../../src/log/logging.ts";
import { writeTrackFile } from "../track_file_write.ts";

/** The value Keelson writes to a Service group's Local-traffic file (`model.ts`). */
export interface LocalTrackValue {
  /** The file, in `track_file_dir`. */
  path: string;
  /** 1: this host has no ready endpoint of the group's Local Services; 0 otherwise. */
  value: 0 | 1;
}

/** Writes each file whose value changed; a failure is said once and tried again next time. */
export class LocalTrackFiles {
  #log = logger("keepalived", "announcer");
  /** The value last written to each file (path to value). */
  #written = new Map<string, 0 | 1>();
  /** The last failure, said once. */
  #problem = "";

  /**
   * Writes the values that differ from the last ones written.
   * @param tracks every Local-traffic file of the latest render, with its value
   */
  async write(tracks: readonly LocalTrackValue[]): Promise<void> {
    for (const { path, value } of tracks) {
      if (this.#written.get(path) === value) continue;
      try {
        await writeTrackFile(path, `${value}\n`);
      } catch (error) {
        this.#written.delete(path);
        const problem = errorMessage(error);
        if (problem !== this.#problem) {
          this.#log.error("keepalived is not told where Local endpoints run: {error}", {
            error: problem,
            path,
          });
        }
        this.#problem = problem;
        continue;
      }
      this.#written.set(path, value);
      this.#problem = "";
      this.#log.info("{path}: {value} (externalTrafficPolicy Local endpoints {where})", {
        path,
        value,
        where: value === 1 ? "elsewhere: priority down to 1" : "here, or not known",
      });
    }
  }
}
