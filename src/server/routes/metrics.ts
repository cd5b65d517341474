/**
 * /metrics: the Prometheus text exposition of the process registry, optionally behind a bearer
 * token.
 *
 * @module
 */
import type { Hono } from "hono";
import type { Registry } from "prom-client";
import { bearerToken } from "../middleware/bearer_token.ts";

/**
 * Adds GET /metrics.
 * @param app the Hono app
 * @param registry the registry to expose
 * @param token the required bearer token, or undefined for none
 */
export function metricsRoute(
  app: Hono,
  registry: Registry,
  token: () => string | undefined,
): void {
  app.get("/metrics", bearerToken(token), async (c) => {
    const body = await registry.metrics();
    return c.body(body, 200, { "Content-Type": registry.contentType });
  });
}
