/**
 * Turns what the Kubernetes client throws (client-node's `ApiException`, a raw non-2xx response of
 * a list or watch, a network error) into the one error type controllers branch on:
 * `ports.KubeApiError`.
 *
 * @module
 */
import { ApiException } from "@kubernetes/client-node";
import { KubeApiError } from "./ports.ts";

/** The fields of a `metav1.Status` we use. */
interface StatusBody {
  reason?: string;
  message?: string;
  code?: number;
  details?: { retryAfterSeconds?: number };
}

/**
 * Maps any error from a Kubernetes call to a `KubeApiError`. An `ApiException` keeps its HTTP
 * code, and the Status body (a JSON string in client-node 2.x) gives reason and message; a
 * network error (no answer at all) becomes code 0. A `KubeApiError` or an abort passes through.
 * @param error what was thrown
 * @param what what was attempted, e.g. `patch node "n1"`; prefixes the message
 * @returns the mapped error (or the abort error unchanged)
 */
export function toKubeApiError(error: unknown, what: string): KubeApiError | Error {
  if (error instanceof KubeApiError) return error;
  if (isAbortError(error)) return error as Error;
  if (error instanceof ApiException) {
    const headers = (error.headers ?? {}) as Record<string, string>;
    return statusError(
      error.code,
      bodyText(error.body),
      headerValue(headers, "retry-after"),
      what,
      {
        cause: error,
      },
    );
  }
  const detail = networkDetail(error);
  return new KubeApiError(`Cannot ${what}: ${detail}`, { code: 0, cause: error });
}

/**
 * Builds a `KubeApiError` from a raw HTTP answer (used by list and watch, which bypass the
 * generated API).
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
    : status?.details?.retryAfterSeconds;
  const message = status?.message ?? (body && body.length < 200 ? body.trim() : "");
  const reason = status?.reason ?? defaultReason(code);
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

function bodyText(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return body;
  try {
    return JSON.stringify(body);
  } catch {
    return undefined;
  }
}

function headerValue(headers: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return value;
  }
  return undefined;
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

function networkDetail(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
