/**
 * The line `keelson render` prints on stderr next to a host's file: which pools of the
 * announcer's kind the host serves, and with which other machines, so a file without a pool's
 * addresses is explained by the inventory rather than guessed at.
 *
 * @module
 */
import { poolServers, poolsServedBy } from "../../src/config/pool_serving.ts";
import type { Config } from "../../src/config/types.ts";
import { terminalSafe } from "../../src/text/terminal_safe.ts";

/**
 * The pools a host serves over one announcer, each with the other machines that serve it.
 * @param config the validated inventory
 * @param host the machine the file is rendered for (from the command line)
 * @param announce the announcement the file carries: VRRP (keepalived) or BGP (BIRD)
 * @returns one line, e.g. `Host "w-1" serves VRRP pool "edge" (with "w-2")`
 */
export function servingNote(config: Config, host: string, announce: "vrrp" | "bgp"): string {
  const name = `"${terminalSafe(host)}"`;
  const kind = announce === "bgp" ? "BGP" : "VRRP";
  const pools = poolsServedBy(config, host).filter((p) => p.announce === announce);
  if (pools.length === 0) {
    const any = config.pools.some((p) => p.announce === announce);
    return `Host ${name} serves no ${kind} pool` +
      (any ? " (no pool's served_by selects it, or it is retired)" : " (the inventory has none)");
  }
  const list = pools.map((pool) => {
    const others = poolServers(config, pool).filter((m) => m.name !== host).map((m) => m.name);
    return `"${pool.name}" (${others.length === 0 ? "alone" : `with ${quoted(others)}`})`;
  });
  return `Host ${name} serves ${kind} pool${pools.length === 1 ? "" : "s"} ${list.join(", ")}`;
}

function quoted(names: readonly string[]): string {
  const shown = names.slice(0, 6).map((n) => `"${n}"`).join(", ");
  return names.length > 6 ? `${shown} and ${names.length - 6} more` : shown;
}
