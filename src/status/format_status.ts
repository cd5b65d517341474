/**
 * `keelson status` output: a text view for people (healthy at a glance, problems in red when
 * colours are on) and JSON for scripts. Pure; the caller decides whether colours are on.
 *
 * @module
 */
import { type ClusterStatus, formatAge } from "./cluster_status.ts";
import { toJsonText } from "../text/json_text.ts";

/** Whether to colour the text. */
export interface FormatOptions {
  color: boolean;
}

const CODES = { red: "31", green: "32", yellow: "33", bold: "1", dim: "2" } as const;

/**
 * Renders the status as text tables.
 * @param status the model from `buildClusterStatus`
 * @param options colours on or off
 * @returns the text, ending in a newline
 */
export function formatStatusText(status: ClusterStatus, options: FormatOptions): string {
  const paint = (code: keyof typeof CODES, text: string) =>
    options.color ? `\x1b[${CODES[code]}m${text}\x1b[0m` : text;
  const nowMs = Date.parse(status.now);
  const out: string[] = [];
  // BGP columns only where some host runs BIRD
  const bgp = status.hosts.some((h) => h.bgp !== undefined);

  const leader = status.leader.identity
    ? status.leader.expired
      ? paint("red", `${status.leader.identity} (Lease expired: nobody leads)`)
      : status.leader.identity
    : paint("red", "none");
  out.push(`${paint("bold", "Leader:")} ${leader}`);
  out.push(
    status.problems.length === 0
      ? paint("green", "Healthy: every VIP is served by exactly one host.")
      : paint("red", `${status.problems.length} problem(s):`),
  );
  for (const p of status.problems) out.push(paint("red", `  ! ${p}`));
  out.push("");

  out.push(paint("bold", "VIPs"));
  out.push(...table(
    ["VIP", "SERVICE", "POOL", "SERVED BY", "VRRP", ...(bgp ? ["BGP (ECMP)"] : []), "SINCE"],
    status.vips.map((v) => {
      const served = v.problem === "no-host"
        ? paint("red", "NO HOST")
        : v.problem === "unknown"
        ? paint("yellow", `UNKNOWN (last ${v.lastSeenOn.join(",")}, silent)`)
        : v.problem === "split-brain"
        ? paint("red", `SPLIT BRAIN: ${v.hosts.join(",")}`)
        : v.hosts.join(",") || "-";
      const states = v.states.map((s) => {
        const text = `${s.host}=${s.state}`;
        return s.state === "FAULT" || s.state === "STOP" ? paint("yellow", text) : text;
      }).join(" ") || "-";
      const since = v.since ? formatAge(Math.max(0, nowMs - Date.parse(v.since))) : "-";
      return [
        v.vip,
        v.services.join(",") || paint("dim", "(no Service)"),
        v.pool ?? "-",
        served,
        states,
        ...(bgp ? [v.bgpHosts.join(",") || "-"] : []),
        since,
      ];
    }),
  ));
  out.push("");

  out.push(paint("bold", "Hosts"));
  out.push(...table(
    ["HOST", "HEARTBEAT", "VERSION", "CONFIG", "KEEPALIVED", "VIPS", ...(bgp ? ["BGP"] : [])],
    status.hosts.map((h) => {
      const beat = h.ageMs === undefined ? "never" : `${formatAge(h.ageMs)} ago`;
      const restart = h.reload?.restart?.length
        ? paint("yellow", `restart required: ${h.reload.restart.join(", ")}`)
        : undefined;
      const reload = h.reload === undefined
        ? paint("red", h.reportError ? `unreadable: ${h.reportError}` : "-")
        : h.reload.ok
        ? restart ?? "ok"
        : [paint("red", "reload failed"), ...(restart ? [restart] : [])].join("; ");
      const keepalived = h.reload?.keepalived ?? "-";
      return [
        h.host,
        h.silent ? paint("red", `SILENT ${beat}`) : beat,
        h.version ?? "-",
        reload,
        keepalived === "invalid" || keepalived === "error" ? paint("red", keepalived) : keepalived,
        String(h.vipsServed),
        ...(bgp ? [bgpSessions(h, paint)] : []),
      ];
    }),
  ));
  out.push("");

  // heartbeats left by retired hosts: only when there are any, dimmed (nothing is wrong)
  if (status.retired.length > 0) {
    out.push(paint("bold", "Retired hosts") + paint("dim", " (not in the inventory, silent)"));
    out.push(...table(
      ["HOST", "LAST HEARTBEAT", "DELETE ITS HEARTBEAT WITH"],
      status.retired.map((h) =>
        [
          h.host,
          h.ageMs === undefined ? "never" : `${formatAge(h.ageMs)} ago`,
          h.cleanup,
        ].map((cell) => paint("dim", cell))
      ),
    ));
    out.push("");
  }

  out.push(paint("bold", "Pools"));
  out.push(...table(
    ["POOL", "FAMILY", "USED", "TOTAL", "FREE", "USE"],
    status.pools.map((p) => {
      const pct = p.total > 0 ? `${Math.round((p.used / p.total) * 100)}%` : "-";
      return [
        p.pool,
        p.family,
        String(p.used),
        String(p.total),
        String(Math.max(0, p.total - p.used)),
        p.full ? paint("red", pct) : pct,
      ];
    }),
  ));
  return out.join("\n") + "\n";
}

/** `tor-a=up(12) tor-b=DOWN`: each session and the prefixes exported over it. */
function bgpSessions(
  h: ClusterStatus["hosts"][number],
  paint: (code: keyof typeof CODES, text: string) => string,
): string {
  if (!h.bgp || h.bgp.length === 0) return "-";
  const text = h.bgp.map((p) =>
    p.established ? `${p.peer}=up(${p.routes})` : paint("red", `${p.peer}=DOWN`)
  ).join(" ");
  return h.bgpDown ? `${text} ${paint("red", "(ALL DOWN)")}` : text;
}

/**
 * Renders the status as indented JSON (the model as is).
 * @param status the model
 * @returns the JSON text, ending in a newline
 */
export function formatStatusJson(status: ClusterStatus): string {
  return toJsonText(status);
}

/**
 * Aligns rows under a header; colour codes do not count towards the width.
 * @param header column titles
 * @param rows cells
 * @returns the lines (a placeholder line when there are no rows)
 */
export function table(header: string[], rows: string[][]): string[] {
  if (rows.length === 0) return ["  (none)"];
  // deno-lint-ignore no-control-regex -- ANSI colour codes are the one control sequence written
  const visible = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "").length;
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => visible(r[i] ?? ""))));
  const line = (cells: string[]) =>
    "  " +
    cells.map((c, i) => i === cells.length - 1 ? c : c + " ".repeat(widths[i]! - visible(c))).join(
      "  ",
    );
  return [line(header), ...rows.map(line)];
}
