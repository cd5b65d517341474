/**
 * The bearer token /metrics requires, read from `[server] metrics_token_file`: re-read at most
 * every 10 s so a rotated token takes effect, and fail closed: a configured file that cannot be
 * read (not a regular file, too large, not readable, not read within its deadline), is empty, or
 * holds characters a bearer token cannot carry keeps /metrics refusing every request, and says so
 * in the log once. The read is asynchronous and bounded: a FIFO or a hung file never stalls the
 * server (health probes go on answering) nor a stop.
 *
 * @module
 */
import { bearerTokenProblem } from "../config/bearer_token.ts";
import { readInputFile, TOKEN_FILE } from "../files/read_input_file.ts";
import { errorMessage } from "../log/error_message.ts";
import { logger } from "../log/logging.ts";

const REREAD_MS = 10_000;

/** Options of `metricsTokenReader`. */
export interface MetricsTokenReaderOptions {
  /** Reads the file. @default readInputFile with the token size cap */
  read?: (path: string) => Promise<string>;
  /** Milliseconds, for the re-read interval. @default Date.now */
  now?: () => number;
}

/**
 * @param path the configured file, re-read from the configuration on every call (a reload may
 *   change or remove it)
 * @param options file reader and clock (tests)
 * @returns the token to require, undefined when none is configured; when the file is unusable, a
 *   random token nobody holds. Concurrent calls share one read.
 */
export function metricsTokenReader(
  path: () => string | undefined,
  options: MetricsTokenReaderOptions = {},
): () => Promise<string | undefined> {
  const read = options.read ?? ((file: string) => readInputFile(file, TOKEN_FILE));
  const now = options.now ?? Date.now;
  let cached:
    | { path: string; token: string | undefined; at: number; readable: boolean }
    | undefined;
  let reading: { path: string; done: Promise<void> } | undefined;

  async function refresh(file: string): Promise<void> {
    let token: string | undefined;
    let readable = true;
    try {
      const text = await read(file);
      const problem = bearerTokenProblem(text);
      if (problem) throw new Error(problem);
      token = text.trim();
    } catch (error) {
      // fail closed: a configured but unusable token file must not open /metrics
      token = crypto.randomUUID();
      readable = false;
      if (cached?.path !== file || cached.readable) {
        logger("server").error(
          "Cannot use [server] metrics_token_file {file}; /metrics refuses every request: {error}",
          { file, error: errorMessage(error) },
        );
      }
    }
    cached = { path: file, token, at: now(), readable };
  }

  return async () => {
    const file = path();
    if (!file) return undefined;
    if (!cached || cached.path !== file || now() - cached.at > REREAD_MS) {
      if (reading?.path !== file) {
        const done = refresh(file).finally(() => {
          if (reading?.done === done) reading = undefined;
        });
        reading = { path: file, done };
      }
      await reading.done;
    }
    // a reload may have renamed the file while it was read: never answer with another's token
    return cached?.path === file ? cached.token : crypto.randomUUID();
  };
}
