/**
 * The health and metrics HTTP app. `createServer` builds it without listening; `serve()`
 * (serve.ts) or a test's `app.request()` drives it.
 *
 * @module
 */
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Registry } from "prom-client";
import { logger } from "../log/logging.ts";
import type { HealthChecks } from "./health_checks.ts";
import { healthRoutes, type ReadyFn } from "./routes/health.ts";
import { metricsRoute } from "./routes/metrics.ts";

/** What the server reads. */
export interface ServerDeps {
  /** The process registry exposed on /metrics. */
  registry: Registry;
  /** The checks of /healthz, /livez and /readyz. */
  health: HealthChecks;
  /** Readiness beyond health: caches synced, configuration loaded; reasons are logged only. */
  ready: ReadyFn;
  /** The bearer token /metrics requires; absent or returning undefined: no authentication. */
  metricsToken?: () => string | undefined | Promise<string | undefined>;
}

/**
 * Builds the app: /healthz, /livez, /readyz, /metrics.
 * @param deps registry, checks, readiness and the metrics token
 * @returns the Hono app (not listening)
 */
export function createServer(deps: ServerDeps): Hono {
  const log = logger("server");
  const app = new Hono();
  app.use(async function noCache(c, next) {
    await next();
    // as upstream's handler chain: probes and scrapes must never be answered from a cache
    c.header("Cache-Control", "no-cache, private");
  });
  healthRoutes(app, deps.health, deps.ready);
  metricsRoute(app, deps.registry, deps.metricsToken ?? (() => undefined));
  app.onError((error, c) => {
    // a refusal by a middleware (bearerAuth's 401) is an answer, not a failure
    if (error instanceof HTTPException) return error.getResponse();
    log.error("Request {method} {path} failed: {error}", {
      method: c.req.method,
      path: c.req.path,
      error,
    });
    return c.text("Internal Server Error\n", 500);
  });
  return app;
}
