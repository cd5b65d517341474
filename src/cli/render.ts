/**
 * `keelson render keepalived`: prints the keepalived file one control-plane host would run once
 * the agent has converged on a cluster snapshot. The VIPs are the ingress addresses of the
 * Services Keelson handles, with the addresses `keelson plan` would give the pending ones; the
 * text comes from the pipeline the running announcer applies (`keepalivedHostFile`), fed from
 * the snapshot instead of the caches. Offline: it talks to no cluster and writes nothing.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../config/types.ts";
import { objectKey } from "../kube/ports.ts";
import {
  keepalivedHostFile,
  planAllocations,
  USER_NAME_REGEXP,
} from "../../providers/baremetal/mod.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { print, printError } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { readInventory, readSnapshot } from "./command_inputs.ts";
import { renderBirdCommand } from "./render_bird.ts";

const USAGE = `Usage: keelson render keepalived --config FILE --host NAME [--state SNAPSHOT]
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
  const { values, positionals } = parseFlags(args, {
    ...INPUT_FLAGS,
    host: { type: "string" },
    "fifo-user": { type: "string" },
  });
  if (values.help) {
    print(USAGE);
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

  const config = await readInventory(configPath);
  if (!config) return EXIT_INVALID;
  const problem = hostProblem(config, configPath, host);
  if (problem) {
    printError(problem);
    return EXIT_INVALID;
  }
  let services: V1Service[] = [];
  if (values.state) {
    const snapshot = await readSnapshot(values.state);
    if (!snapshot) return EXIT_INVALID;
    services = snapshot.services;
  }
  const fifoUser = values["fifo-user"] ?? "keelson";
  if (!USER_NAME_REGEXP.test(fifoUser)) {
    throw new UsageError(`--fifo-user "${fifoUser}" is not a user name`);
  }
  const rendered = keepalivedHostFile({
    config,
    host,
    services: convergedServices(config, services),
    notifyFifoUser: fifoUser,
  });
  if ("error" in rendered) {
    printError(rendered.error);
    return EXIT_INVALID;
  }
  if (rendered.withdrawal) {
    // hostProblem refused the hosts that never drive keepalived; what is left is a retired one,
    // given what `keelson run` gives its keepalived at a reload
    printError(
      `Host "${host}" serves no VIP through keepalived (${rendered.withdrawal.reason} in ` +
        `${configPath}): this file has no VRRP instance; the other control-plane hosts no longer ` +
        `peer with it`,
    );
  }
  for (const { service, value, reason } of rendered.skipped) {
    printError(`Not serving "${value}"${service ? ` of service "${service}"` : ""}: ${reason}`);
  }
  print(rendered.text);
  return EXIT_OK;
}

/**
 * The Services as they will be once the leader has allocated: each Service the plan gives new
 * addresses gets them as its ingress; the others stay as they are.
 * @param config the inventory
 * @param services the snapshot's Services
 * @returns copies with the planned ingress
 */
export function convergedServices(config: Config, services: readonly V1Service[]): V1Service[] {
  const planned = new Map(
    planAllocations(config, services).services
      .filter((p) => p.outcome === "allocated")
      .map((p) => [p.serviceKey, p.ips]),
  );
  return services.map((service) => {
    const ips = planned.get(objectKey(service));
    if (!ips) return service;
    return {
      ...service,
      status: {
        ...service.status,
        loadBalancer: { ingress: ips.map((ip) => ({ ip, ipMode: "VIP" })) },
      },
    };
  });
}

function hostProblem(config: Config, configPath: string, host: string): string | undefined {
  const controlPlane = config.machines.filter((m) => m.role === "control-plane")
    .map((m) => `"${m.name}"`).join(", ") || "none";
  const machine = config.machines.find((m) => m.name === host);
  if (!config.keepalived.enabled) {
    return `Cannot render keepalived: ${configPath} sets [keepalived] enabled = false, so ` +
      `Keelson drives keepalived on no host (a reload that turns it off gives the keepalived ` +
      `a running keelson drives a file with no VRRP instance)`;
  }
  if (!machine) {
    return `Cannot render keepalived for host "${host}": ${configPath} has no machine of that ` +
      `name (control-plane machines: ${controlPlane})`;
  }
  if (machine.role !== "control-plane") {
    return `Cannot render keepalived for host "${host}": its role is "${machine.role}", and ` +
      `only control-plane machines run keepalived (control-plane machines: ${controlPlane})`;
  }
  return undefined;
}
