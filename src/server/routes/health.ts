/**
 * /healthz, /livez and /readyz with the upstream healthz handler's answers: `ok` (200), or each
 * check as `[+]name ok` / `[-]name failed: reason withheld` and `<path> check failed` (500);
 * `?verbose` lists the checks on success too, ending `<path> check passed`; `?exclude=name`
 * (repeatable) skips a check.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { logger } from "../../log/logging.ts";
import type { HealthChecks, HealthReport } from "../health_checks.ts";

/** What the readiness endpoint consults beyond the health checks. */
export type ReadyFn = () => { ok: boolean; reasons: string[] };

/**
 * Adds /healthz, /livez (the health checks) and /readyz (the health checks plus `ready`).
 * @param app the Hono app
 * @param health the registered checks
 * @param ready caches synced and configuration loaded
 */
export function healthRoutes(app: Hono, health: HealthChecks, ready: ReadyFn): void {
  const log = logger("server", "health");
  const handle = (name: string, extra?: () => ReturnType<ReadyFn>) => (c: Context): Response => {
    const report = health.evaluate(c.req.queries("exclude") ?? []);
    if (extra) {
      const excluded = report.unmatchedExcludes.includes("ready");
      const status = excluded ? { ok: true, reasons: [] } : extra();
      if (excluded) {
        report.unmatchedExcludes = report.unmatchedExcludes.filter((n) => n !== "ready");
      }
      const reason = status.reasons.join("; ") || "not ready";
      report.results.push({
        name: "ready",
        ok: status.ok,
        excluded,
        ...(status.ok ? {} : { reason }),
      });
      report.ok &&= status.ok;
    }
    for (const r of report.results) {
      if (!r.ok) {
        log.debug("{endpoint} check {check} failed: {reason}", {
          endpoint: name,
          check: r.name,
          reason: r.reason,
        });
      }
    }
    c.header("X-Content-Type-Options", "nosniff");
    const verbose = c.req.query("verbose") !== undefined;
    if (report.ok && !verbose) return c.text("ok");
    const body = `${renderChecks(report)}${name} check ${report.ok ? "passed" : "failed"}\n`;
    return c.text(body, report.ok ? 200 : 500);
  };
  app.get("/healthz", handle("healthz"));
  app.get("/livez", handle("livez"));
  app.get("/readyz", handle("readyz", ready));
}

/**
 * The per-check lines of a report.
 * @param report the evaluated checks
 * @returns one line per check, and a warning line for unknown excludes
 */
export function renderChecks(report: HealthReport): string {
  let out = "";
  for (const r of report.results) {
    if (r.excluded) out += `[+]${r.name} excluded: ok\n`;
    else if (r.ok) out += `[+]${r.name} ok\n`;
    else out += `[-]${r.name} failed: reason withheld\n`;
  }
  if (report.unmatchedExcludes.length > 0) {
    const names = report.unmatchedExcludes.map((n) => `"${n}"`).join(", ");
    out += `warn: some health checks cannot be excluded: no matches for ${names}\n`;
  }
  return out;
}
