/**
 * The text of anything thrown, for logs, Events and user-facing messages: an Error's message
 * (without the stack or the `Error:` prefix), anything else as a string.
 *
 * @module
 */

/**
 * @param error what was thrown or rejected
 * @returns `error.message` for an Error, `String(error)` otherwise
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The message with its cause's message (`Cannot GET /x: connection refused`), for errors that
 * wrap a transport failure.
 * @param error what was thrown or rejected
 * @returns `message: cause.message` when the cause is an Error, else as `errorMessage`
 */
export function errorMessageWithCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

/**
 * @param error what was thrown or rejected
 * @returns the Error itself, or a new Error whose message is `String(error)`
 */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
