/**
 * `keelson status` output: a text view for people (healthy at a glance, problems in red when
 * colours are on) and JSON for scripts. Pure; the caller decides whether colours are on.
 *
 * Every text of the model comes from the API (a Lease holder, an annotation, a heartbeat's
 * report) and is escaped before it is laid out (`terminal_safe.ts`): a control character shows as
 * `\x1b`, never acts, and no value holds a line break; the only escape sequences written are the
 * colours painted here. The JSON keeps every value exact (as `\uXXXX` escapes).
 *
 * @module
 */
import { claimedAge, claimedAgo, formatAge } from "./ages.ts";
import type { ClusterStatus } from "./status_model.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import { shortDigest } from "./inventory_agreement.ts";
import { describeHosts } from "./pool_servers.ts";
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
export function formatStatusText(unsafe: ClusterStatus, options: FormatOptions): string {
  const status = escapedStrings(unsafe);
  const paint = (code: keyof typeof CODES, text: string) =>
    options.color ? `\x1b[${CODES[code]}m${text}\x1b[0m` : text;
  const nowMs = Date.parse(status.now);
  const out: string[] = [];
  // BGP columns only where some host runs BIRD
  const bgp = status.hosts.some((h) => h.bgp !== undefined);
  // the inventory column only where some host reports its inventory's digest
  const inventories = status.hosts.some((h) => h.inventory !== undefined);

  const leader = status.leader.identity
    ? status.leader.expired
      ? paint("red", `${status.leader.identity} (Lease expired: nobody leads)`)
      : status.leader.freshness === "unobserved"
      ? `${status.leader.identity} ${
        paint(
          "yellow",
          `(unconfirmed: not seen renewing in ${formatAge(status.leader.ageMs ?? 0)}; ` +
            `${claimedAge(status.leader.renewTime, nowMs)})`,
        )
      }`
      : status.leader.identity
    : paint("red", "none");
  const judged = status.judgedBy.by === "leader"
    ? paint(
      "dim",
      ` (heartbeats as the leader judges them, ${formatAge(status.judgedBy.ageMs)} ago)`,
    )
    : "";
  out.push(`${paint("bold", "Leader:")} ${leader}${judged}`);
  // a BGP VIP is served by every host that announces it (ECMP): "exactly one" is VRRP's rule
  const served = bgp
    ? "every VIP is served (over VRRP by exactly one host)."
    : "every VIP is served by exactly one host.";
  out.push(
    status.problems.length === 0
      ? paint(
        "green",
        status.inventoryKnown
          ? `Healthy: every serving host reports, ${served}`
          : `Healthy: ${served}`,
      )
      : paint("red", `${status.problems.length} problem(s):`),
  );
  for (const p of status.problems) out.push(paint("red", `  ! ${p}`));
  const file = status.inventory.file;
  if (file && file.matches === false) {
    out.push(
      paint(
        "yellow",
        `  note: the --config file (sha256 ${shortDigest(file.sha256)}) is not the inventory ${
          status.inventory.reference?.from === "leader" ? "the leader runs" : "most hosts run"
        } (sha256 ${shortDigest(status.inventory.reference!.sha256)})`,
      ),
    );
  }
  out.push("");

  const silent = new Set(status.hosts.filter((h) => h.silent).map((h) => h.host));
  out.push(paint("bold", "VIPs"));
  out.push(...table(
    ["VIP", "SERVICE", "POOL", "SERVED BY", "STATES", ...(bgp ? ["BGP (ECMP)"] : []), "SINCE"],
    status.vips.map((v) => {
      const served = v.problem === "no-host"
        ? paint("red", "NO HOST")
        : v.problem === "unknown"
        ? paint("yellow", unknownWhy(v, silent))
        : v.problem === "split-brain"
        ? paint("red", `SPLIT BRAIN: ${v.hosts.join(",")}`)
        : v.problem === "no-service"
        ? paint("red", `NO SERVICE: ${[...new Set([...v.hosts, ...v.bgpHosts])].join(",")}`)
        : v.hosts.join(",") || "-";
      // a host that has not renewed since another took the VIP: died, or about to show a split
      const superseded = v.superseded.length > 0
        ? " " + paint("yellow", `(${v.superseded.join(",")}: not renewed since)`)
        : "";
      const states = v.states.map((s) => {
        const text = `${s.host}=${s.state}`;
        return s.state === "failed" || s.state === "stopped" ? paint("yellow", text) : text;
      }).join(" ") || "-";
      const since = v.since ? formatAge(Math.max(0, nowMs - Date.parse(v.since))) : "-";
      return [
        v.vip,
        v.services.join(",") || paint("dim", "(no Service)"),
        v.pool ?? "-",
        served + superseded,
        states,
        ...(bgp ? [v.bgpHosts.join(",") || "-"] : []),
        since,
      ];
    }),
  ));
  out.push("");

  out.push(paint("bold", "Hosts"));
  out.push(...table(
    [
      "HOST",
      "HEARTBEAT",
      "VERSION",
      ...(inventories ? ["INVENTORY"] : []),
      "CONFIG",
      "APPLIED",
      "VIPS",
      ...(bgp ? ["BGP"] : []),
    ],
    status.hosts.map((h) => {
      const beat = h.freshness === "fresh"
        ? `${formatAge(h.ageMs)} ago`
        : h.freshness === "silent"
        ? paint(
          "red",
          h.renewalSeen ? `SILENT ${formatAge(h.ageMs)} ago` : `SILENT >${formatAge(h.ageMs)}`,
        )
        : paint(
          "yellow",
          `unconfirmed (its clock: ${claimedAgo(h.lastHeartbeat, nowMs) ?? "no time"})`,
        );
      const restart = h.reload?.restart?.length
        ? paint("yellow", `restart required: ${h.reload.restart.join(", ")}`)
        : undefined;
      const reload = h.reload === undefined
        ? paint("red", h.reportError ? `unreadable: ${h.reportError}` : "-")
        : h.reload.ok
        ? restart ?? "ok"
        : [paint("red", "reload failed"), ...(restart ? [restart] : [])].join("; ");
      const applied = h.announcers.length === 0
        ? "-"
        : h.announcers.map((a) =>
          a.apply === "invalid" || a.apply === "error"
            ? paint("red", `${a.name}=${a.apply}`)
            : `${a.name}=${a.apply}`
        ).join(" ");
      const inventory = h.inventory === undefined
        ? "-"
        : h.otherInventory
        ? paint("red", `${shortDigest(h.inventory.sha256)} (OTHER)`)
        : shortDigest(h.inventory.sha256);
      return [
        h.host,
        beat,
        h.version ?? "-",
        ...(inventories ? [inventory] : []),
        reload,
        applied,
        h.omitted?.vips ? `${h.vipsServed} (+${h.omitted.vips} not listed)` : String(h.vipsServed),
        ...(bgp ? [bgpSessions(h, paint)] : []),
      ];
    }),
  ));
  // reports cut at their size limit: what they left out is unknown, say so
  for (const h of status.hosts) {
    const left = Object.entries(h.omitted ?? {}).map(([list, n]) => `${n} ${list}`);
    if (left.length > 0) {
      out.push(
        paint(
          "yellow",
          `  ${h.host}: report cut at its size limit, not listed: ${left.join(", ")}`,
        ),
      );
    }
  }
  out.push("");

  // Services waiting for an address: only when there are any
  if (status.pending.length > 0) {
    out.push(paint("bold", "Pending Services") + paint("dim", " (LoadBalancer, no address yet)"));
    out.push(...table(
      ["SERVICE", "CLASS"],
      status.pending.map((p) => [p.service, p.loadBalancerClass ?? "-"]),
    ));
    out.push("");
  }

  // heartbeats left by retired hosts: only when there are any, dimmed (nothing is wrong)
  if (status.retired.length > 0) {
    out.push(paint("bold", "Retired hosts") + paint("dim", " (not in the inventory, silent)"));
    out.push(...table(
      ["HOST", "LAST HEARTBEAT (ITS CLOCK)", "DELETE ITS HEARTBEAT WITH"],
      status.retired.map((h) =>
        [
          h.host,
          claimedAgo(h.lastHeartbeat, nowMs) ?? "never",
          h.cleanup,
        ].map((cell) => paint("dim", cell))
      ),
    ));
    out.push("");
  }

  // machines' power: only when the leader reports any
  if (status.power.length > 0) {
    out.push(
      paint("bold", "Machine power") +
        paint("dim", ` (from the leader ${status.powerFrom}'s heartbeat)`),
    );
    const ago = (iso: string | undefined) =>
      iso === undefined ? "never" : `${formatAge(Math.max(0, nowMs - Date.parse(iso)))} ago`;
    out.push(...table(
      ["MACHINE", "POWER", "FOR", "LAST ANSWER", "DETAIL"],
      status.power.map((p) => [
        p.machine,
        p.state === "off"
          ? paint("yellow", "off")
          : p.state === "unknown"
          ? paint("red", "unknown")
          : "on",
        p.since === undefined ? "-" : formatAge(Math.max(0, nowMs - Date.parse(p.since))),
        ago(p.answered),
        p.detail,
      ]),
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
  if (status.servingHosts.length > 0) {
    out.push("", paint("bold", "Serving hosts"));
    out.push(...table(
      ["POOL", "ANNOUNCE", "HOSTS"],
      status.servingHosts.map((p) => [
        p.pool,
        p.announce === "bgp" ? "BGP" : "VRRP",
        p.hosts.length === 0
          ? paint("red", "none")
          : p.hosts.map((h) => h.state === "serving" ? h.host : paint("red", describeHosts([h])))
            .join(", "),
      ]),
    ));
  }
  return out.join("\n") + "\n";
}

/** Why a VIP is unknown: its last hosts went silent or are not yet seen renewing, or cut reports. */
function unknownWhy(v: ClusterStatus["vips"][number], silent: ReadonlySet<string>): string {
  if (v.lastSeenOn.length === 0) return `UNKNOWN (${v.maybeOn.join(",")}: report cut)`;
  const all = v.lastSeenOn.every((h) => silent.has(h));
  return `UNKNOWN (last ${v.lastSeenOn.join(",")}, ${all ? "silent" : "unconfirmed"})`;
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

/** A copy of `value` with every string in it `terminalSafe`. */
function escapedStrings<T>(value: T): T {
  if (typeof value === "string") return terminalSafe(value) as T;
  if (Array.isArray(value)) return value.map(escapedStrings) as T;
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [key, escapedStrings(v)]),
    ) as T;
  }
  return value;
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
