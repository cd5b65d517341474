/**
 * `keelson render keepalived`: prints the keepalived file one control-plane host would run once
 * the agent has converged on a cluster snapshot. The VIPs are the ingress addresses of the
 * Services Keelson handles, with the addresses `keelson plan` would give the pending ones; the
 * provider renders the text (`renderHostFile`) with the pipeline its running announcer applies,
 * fed from the snapshot instead of the caches. Offline: it talks to no cluster and writes nothing.
 *
 * @module
 */
import { EXIT_OK } from "./exit_codes.ts";
import { print } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { printHostFile } from "./print_host_file.ts";
import { renderBirdCommand } from "./render_bird.ts";

/** The help text of `keelson render` (keepalived). */
export const RENDER_USAGE =
  `Usage: keelson render keepalived --config FILE --host NAME [--state SNAPSHOT]
       keelson render bird --config FILE --host NAME [--state SNAPSHOT] [--show-secrets]
         (BIRD's configuration for the host; "keelson render bird --help" for its flags)

Prints the keepalived configuration file that Keelson would keep on control-plane host NAME:
the control-plane VIP from the inventory and, with --state, the VIPs of the LoadBalancer
Services Keelson handles (their current ingress addresses plus what "keelson plan" would
allocate to pending ones). A retired control-plane machine gets a file with no VRRP instance,
as "keelson run" gives it. Nothing is written anywhere.

Flags:
  -c, --config FILE      the inventory (env KEELSON_CONFIG)
      --host NAME        a machine of the inventory with role "control-plane" (env KEELSON_HOST)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON (optional; without it only the
                         control-plane VIP is rendered):
                         kubectl get services -A -o yaml > state.yaml
      --fifo-user NAME   the user keelson run runs as, owner of keepalived's notify FIFO
                         (default keelson, as deploy/systemd/keelson.service)
  -h, --help             print this help

Exit codes: 0 printed, 1 invalid inventory, unreadable snapshot or a host that cannot run
keepalived, 2 wrong command line.`;

/** The flag table of `keelson render keepalived` (node:util parseArgs). */
export const RENDER_FLAGS = {
  ...INPUT_FLAGS,
  host: { type: "string" },
  "fifo-user": { type: "string" },
} as const;

/**
 * Runs `keelson render`.
 * @param args the arguments after `render`
 * @returns 0 when the file was printed, 1 when the inputs cannot be used
 * @throws {UsageError} on a wrong command line (exit 2)
 * @example
 * ```ts
 * const code = await renderCommand([
 *   "keepalived", "--config", "keelson.toml", "--state", "state.yaml", "--host", "cp-1",
 * ]);
 * ```
 */
export async function renderCommand(args: string[]): Promise<number> {
  if (args[0] === "bird") return await renderBirdCommand(args.slice(1));
  const { values, positionals } = parseFlags(args, RENDER_FLAGS);
  if (values.help) {
    print(RENDER_USAGE);
    return EXIT_OK;
  }
  const [what, extra] = positionals;
  if (what === "bird") return await renderBirdCommand(args.filter((a) => a !== "bird"));
  if (what !== "keepalived") {
    throw new UsageError(
      what === undefined
        ? 'name what to render: "keelson render keepalived" or "keelson render bird"'
        : `cannot render "${what}"; the targets are "keepalived" and "bird"`,
    );
  }
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
  const host = requiredFlag(values.host, "--host NAME", "KEELSON_HOST");

  return await printHostFile({
    announcer: "keepalived",
    host,
    configFile: configPath,
    ...(values["fifo-user"] !== undefined ? { runAsUser: values["fifo-user"] } : {}),
  }, values.state);
}
