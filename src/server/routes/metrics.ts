/**
 * /metrics: the Prometheus text exposition of the process registry, optionally behind a bearer
 * token (Hono's `bearerAuth`, which compares in constant time).
 *
 * @module
 */
import type { Hono, MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { timingSafeEqual } from "hono/utils/buffer";
import type { Registry } from "prom-client";

/** Every refusal looks the same: 401, this challenge, this body (a malformed header too). */
const CHALLENGE = 'Bearer realm="keelson"';
const refusal = { wwwAuthenticateHeader: CHALLENGE, message: "Unauthorized\n" };

/**
 * Adds GET /metrics.
 * @param app the Hono app
 * @param registry the registry to expose
 * @param token the required bearer token, or undefined for none (read on every request, so a
 *   rotated or removed token applies at once)
 */
export function metricsRoute(
  app: Hono,
  registry: Registry,
  token: () => string | undefined | Promise<string | undefined>,
): void {
  const auth = bearerAuth({
    verifyToken: async (presented) => {
      const expected = await token();
      return expected !== undefined && await timingSafeEqual(expected, presented);
    },
    noAuthenticationHeader: refusal,
    invalidToken: refusal,
    // bearerAuth answers 400 to a header that is not `Bearer <token>`; keep it a plain 401
    invalidAuthenticationHeader: {
      wwwAuthenticateHeader: CHALLENGE,
      message: () => new Response("Unauthorized\n", { status: 401 }),
    },
  });
  const requireToken: MiddlewareHandler = async (c, next) =>
    (await token()) === undefined ? await next() : await auth(c, next);
  app.get("/metrics", requireToken, async (c) => {
    const body = await registry.metrics();
    return c.body(body, 200, { "Content-Type": registry.contentType });
  });
}
