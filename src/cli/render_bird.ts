/**
 * `keelson render bird`: prints the BIRD file one control-plane host would run once the agent has
 * converged on a cluster snapshot: the VIPs of `announce = "bgp"` pools (current ingress plus what
 * `keelson plan` would allocate), the control-plane VIP when it is announced over BGP (as if the
 * local apiserver were ready), and the Nodes' pod CIDRs when a peer receives them. The provider
 * renders the text (`renderHostFile`) with the announcer's pipeline, gating included: a machine
 * not `active`, a Node not Ready, a Local Service without an endpoint on the host. Offline: it
 * talks to no cluster and writes nothing. Passwords are replaced by a placeholder unless
 * `--show-secrets` is given.
 *
 * @module
 */
import { EXIT_OK } from "./exit_codes.ts";
import { print } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { printHostFile } from "./print_host_file.ts";

/** The help text of `keelson render bird`. */
export const RENDER_BIRD_USAGE =
  `Usage: keelson render bird --config FILE --host NAME [--state SNAPSHOT] [--show-secrets]

Prints the BIRD 2 configuration file that Keelson would keep on control-plane host NAME: the
sessions to its [[bgp.peers]], the control-plane VIP when [control_plane] announce = "bgp", and,
with --state, the VIPs of the Services in announce = "bgp" pools and the Nodes' pod CIDRs.
Nothing is written anywhere.

Flags:
  -c, --config FILE      the inventory (env KEELSON_CONFIG)
      --host NAME        a machine of the inventory with role "control-plane" (env KEELSON_HOST)
  -s, --state SNAPSHOT   a saved cluster state, YAML or JSON (optional):
                         kubectl get nodes,svc,endpointslices -A -o yaml > state.yaml
      --show-secrets     print TCP-MD5 passwords instead of a placeholder
  -h, --help             print this help

Exit codes: 0 printed, 1 invalid inventory, unreadable snapshot or a host that cannot run
BIRD, 2 wrong command line.`;

/** The flag table of `keelson render bird` (node:util parseArgs). */
export const RENDER_BIRD_FLAGS = {
  ...INPUT_FLAGS,
  host: { type: "string" },
  "show-secrets": { type: "boolean" },
} as const;

/**
 * Runs `keelson render bird`.
 * @param args the arguments after `render bird`
 * @returns 0 when the file was printed, 1 when the inputs cannot be used
 * @throws {UsageError} on a wrong command line (exit 2)
 */
export async function renderBirdCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, RENDER_BIRD_FLAGS);
  if (values.help) {
    print(RENDER_BIRD_USAGE);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const configPath = requiredFlag(values.config, "--config FILE", "KEELSON_CONFIG");
  const host = requiredFlag(values.host, "--host NAME", "KEELSON_HOST");

  return await printHostFile({
    announcer: "bird",
    host,
    configFile: configPath,
    showSecrets: values["show-secrets"] ?? false,
  }, values.state);
}
