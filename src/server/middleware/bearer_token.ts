/**
 * Requires `Authorization: Bearer <token>` when a token is configured, comparing in constant
 * time (SHA-256 of both sides, then every byte) so the answer time says nothing about the token.
 *
 * @module
 */
import type { Context, MiddlewareHandler, Next } from "hono";

/**
 * A middleware that answers 401 unless the request carries the current token.
 * @param token returns the token, or undefined for "no authentication" (read on every request,
 *   so a reloaded token applies at once)
 * @returns the Hono middleware
 */
export function bearerToken(token: () => string | undefined): MiddlewareHandler {
  return async function requireBearerToken(c: Context, next: Next): Promise<Response | void> {
    const expected = token();
    if (expected === undefined) return await next();
    const header = c.req.header("Authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match && await constantTimeEqual(match[1]!, expected)) return await next();
    c.header("WWW-Authenticate", 'Bearer realm="keelson"');
    return c.text("Unauthorized\n", 401);
  };
}

/**
 * Compares two strings without an early exit.
 * @param a one string
 * @param b the other
 * @returns true when equal
 */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [x, y] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(a)),
    crypto.subtle.digest("SHA-256", encoder.encode(b)),
  ]);
  const left = new Uint8Array(x);
  const right = new Uint8Array(y);
  let diff = 0;
  for (let i = 0; i < left.length; i++) diff |= left[i]! ^ right[i]!;
  return diff === 0;
}
