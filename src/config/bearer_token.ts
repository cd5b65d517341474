/**
 * What a bearer token file may hold: one RFC 6750 `b64token`, the only characters an
 * `Authorization: Bearer` header can carry. `check` and the /metrics token reader ask the same.
 *
 * @module
 */

/** RFC 6750 `b64token`. */
const B64TOKEN = /^[A-Za-z0-9._~+/-]+=*$/;

/**
 * Why a token file's text cannot be a bearer token, or undefined when it can.
 * @param text the file's text; surrounding white space (the final newline) is ignored
 * @returns a sentence that never quotes the token
 */
export function bearerTokenProblem(text: string): string | undefined {
  const token = text.trim();
  if (!token) return "the file is empty";
  if (!B64TOKEN.test(token)) {
    return "the token holds characters a bearer token cannot carry (use letters, digits and " +
      "-._~+/, e.g. `openssl rand -hex 32`)";
  }
  return undefined;
}
