/**
 * The bearer token /metrics requires, read from `[server] metrics_token_file`: re-read at most
 * every 10 s so a rotated token takes effect, and fail closed: a configured file that cannot be
 * read, is empty, or holds characters a bearer token cannot carry (RFC 6750 `b64token`) keeps
 * /metrics refusing every request, and says so in the log once.
 *
 * @module
 */
import { errorMessage } from "../log/error_message.ts";
import { logger } from "../log/logging.ts";

/** RFC 6750 `b64token`, the characters `Authorization: Bearer` can carry. */
const B64TOKEN = /^[A-Za-z0-9._~+/-]+=*$/;
const REREAD_MS = 10_000;

/** Options of `metricsTokenReader`. */
export interface MetricsTokenReaderOptions {
  /** Reads the file. @default Deno.readTextFileSync */
  read?: (path: string) => string;
  /** Milliseconds, for the re-read interval. @default Date.now */
  now?: () => number;
}

/**
 * @param path the configured file, re-read from the configuration on every call (a reload may
 *   change or remove it)
 * @param options file reader and clock (tests)
 * @returns the token to require, undefined when none is configured; when the file is unusable, a
 *   random token nobody holds
 */
export function metricsTokenReader(
  path: () => string | undefined,
  options: MetricsTokenReaderOptions = {},
): () => string | undefined {
  const read = options.read ?? Deno.readTextFileSync;
  const now = options.now ?? Date.now;
  let cached:
    | { path: string; token: string | undefined; at: number; readable: boolean }
    | undefined;
  return () => {
    const file = path();
    if (!file) return undefined;
    if (!cached || cached.path !== file || now() - cached.at > REREAD_MS) {
      let token: string | undefined;
      let readable = true;
      try {
        token = read(file).trim();
        if (!token) throw new Error("the file is empty");
        if (!B64TOKEN.test(token)) {
          throw new Error(
            "the token holds characters a bearer token cannot carry (use letters, digits and -._~+/, e.g. `openssl rand -hex 32`)",
          );
        }
      } catch (error) {
        // fail closed: a configured but unusable token file must not open /metrics
        token = crypto.randomUUID();
        readable = false;
        if (cached?.path !== file || cached.readable) {
          logger("server").error("Cannot use {file}; /metrics refuses every request: {error}", {
            file,
            error: errorMessage(error),
          });
        }
      }
      cached = { path: file, token, at: now(), readable };
    }
    return cached.token;
  };
}
