/**
 * Turns a non-2xx answer of the API server (with its Status body) into the one error type
 * controllers branch on: `ports.KubeApiError`; tells an abort from a failure. The server's text
 * (`Status.message`, `reason`, a body that is not a Status) is foreign: it becomes one escaped
 * line of at most `SERVER_TEXT_MAX` characters, so it cannot forge a line of a command's output
 * or a log, or flood either.
 *
 * @module
 */
import { terminalSafeExcerpt } from "../text/terminal_safe.ts";
import { KubeApiError } from "./ports.ts";

/** The most characters of a server's error text kept in a message. */
export const SERVER_TEXT_MAX = 1000;

/** The fields of a `metav1.Status` we use. */
interface StatusBody {
  reason?: string;
  message?: string;
  code?: number;
  details?: { retryAfterSeconds?: number };
}

/**
 * Builds a `KubeApiError` from a raw HTTP answer.
 * @param code HTTP status
 * @param body response text (a Status object, or anything)
 * @param retryAfter the `Retry-After` header value, if any
 * @param what what was attempted
 * @param options the cause to attach
 * @returns the error
 */
export function statusError(
  code: number,
  body: string | undefined,
  retryAfter: string | null | undefined,
  what: string,
  options: { cause?: unknown } = {},
): KubeApiError {
  const status = parseStatus(body);
  const retryFromHeader = retryAfter ? Number.parseInt(retryAfter, 10) : NaN;
  const retryAfterSeconds = Number.isFinite(retryFromHeader)
    ? retryFromHeader
    : validSeconds(status?.details?.retryAfterSeconds);
  const raw = typeof status?.message === "string"
    ? status.message
    : (body && body.length < 200 ? body.trim() : "");
  const message = terminalSafeExcerpt(raw, SERVER_TEXT_MAX);
  // a reason is a CamelCase word; anything else from the server is not trusted as one
  const reason = typeof status?.reason === "string" && /^[A-Za-z]{1,64}$/.test(status.reason)
    ? status.reason
    : defaultReason(code);
  return new KubeApiError(
    `Cannot ${what}: ${message || reason || `HTTP ${code}`} (HTTP ${code})`,
    {
      code,
      ...(reason ? { reason } : {}),
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      cause: options.cause,
    },
  );
}

/**
 * True for an abort (our signal fired) rather than a failure.
 * @param error anything thrown
 * @returns whether it is an AbortError or TimeoutError DOMException
 */
export function isAbortError(error: unknown): boolean {
  return error instanceof DOMException &&
    (error.name === "AbortError" || error.name === "TimeoutError");
}

function parseStatus(body: string | undefined): StatusBody | undefined {
  if (!body) return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === "object" && (parsed as { kind?: unknown }).kind === "Status") {
      return parsed as StatusBody;
    }
  } catch {
    // not JSON: a proxy's HTML page or plain text; the caller keeps the raw text
  }
  return undefined;
}

function validSeconds(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function defaultReason(code: number): string {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}
