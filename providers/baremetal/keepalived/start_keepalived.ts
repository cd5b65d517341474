/**
 * keepalived on a control-plane host: the announcer that renders and applies the config, the
 * kube-apiserver probe behind the control-plane VIP, and the VIP-role gauge. Needs no
 * Kubernetes API, so the control-plane VIP comes up before the cluster exists. The VRIDs, peers
 * and priorities are chosen in `model.ts`; `render.ts` turns that model into keepalived's syntax.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { Config } from "../../../src/config/types.ts";
import { runsKeepalived } from "../../../src/config/restart_settings.ts";
import { delay } from "../../../src/kube/delay.ts";
import { logger } from "../../../src/log/logging.ts";
import type { HostAnnouncer } from "../host_announcer.ts";
import { ApiserverProbe } from "../control_plane/apiserver_probe.ts";
import { KeepalivedAnnouncer } from "./announcer.ts";
import { type ApplyOutcome, KeepalivedApplier } from "./config_applier.ts";
import { currentUser } from "./current_user.ts";
import { APISERVER_TRACK_FILE } from "./model.ts";
import { GENERATED_HEADER } from "./render.ts";
import { instancesInFile } from "./vrrp_state.ts";
import { createVipRoleGauge, observeVipRoles } from "./vip_roles.ts";

/** Options of `startKeepalived`. */
export interface KeepalivedOptions {
  config: () => Config;
  host: string;
  registry: Registry;
  signal: AbortSignal;
}

/** The running keepalived side: one of the provider's host announcers. */
export interface RunningKeepalived extends HostAnnouncer {
  announcer: KeepalivedAnnouncer;
  /** Whether keepalived was told to write its notify FIFO (the user Keelson runs as is known). */
  notifyFifo: boolean;
  /** Outcome of the last apply ("none" before the first). */
  lastApply: () => ApplyOutcome | "none";
}

const VIP_ROLE_PERIOD_MS = 10_000;

/**
 * Starts the keepalived side when this host is a control-plane machine and `[keepalived]` is
 * enabled; otherwise logs why not and returns undefined.
 * @param options config source, host, registry, signal
 * @returns the running parts, or undefined
 */
export async function startKeepalived(
  options: KeepalivedOptions,
): Promise<RunningKeepalived | undefined> {
  const log = logger("keepalived");
  const config = options.config();
  if (!config.keepalived.enabled) {
    log.info("keepalived management is off ([keepalived] enabled = false)");
    await warnLeftInstances(config.keepalived.config_file);
    return undefined;
  }
  // the same decision the restart-required diff makes (config/restart_settings.ts)
  if (!runsKeepalived(config, options.host)) {
    log.info(
      "Host {host} is not a control-plane machine of the inventory: not rendering keepalived",
      {
        host: options.host,
      },
    );
    await warnLeftInstances(config.keepalived.config_file);
    return undefined;
  }
  const ka = config.keepalived;
  const applier = new KeepalivedApplier({
    configFile: ka.config_file,
    checkCommand: ka.check_command,
    pidFile: ka.pid_file,
    ...(ka.reload_command ? { reloadCommand: ka.reload_command } : {}),
    registry: options.registry,
  });
  const loops: Promise<void>[] = [];
  let probe: ApiserverProbe | undefined;
  if (config.control_plane.vip.length > 0) {
    probe = new ApiserverProbe({
      url: `https://127.0.0.1:${config.control_plane.port}/readyz`,
      trackFile: `${ka.track_file_dir.replace(/\/+$/, "")}/${APISERVER_TRACK_FILE}`,
      intervalMs: config.control_plane.health_interval.ms,
      timeoutMs: config.control_plane.health_timeout.ms,
    });
    const probing = probe.run(options.signal);
    // observed from now on: a rejection during the first sync below is no "unhandled rejection"
    probing.catch(() => {});
    loops.push(probing);
  }
  const user = await currentUser();
  const notifyFifoUser = user.name;
  if (user.name === undefined) {
    log.warn("Cannot find this process's user name ({problem}): no keepalived notify FIFO", {
      problem: user.problem,
    });
  }
  let lastApply: ApplyOutcome | "none" = "none";
  const announcer = new KeepalivedAnnouncer({
    config: options.config,
    // the file paths are read only here (README: start-only settings)
    configFile: ka.config_file,
    host: options.host,
    applier: {
      apply: async (text) => {
        const result = await applier.apply(text);
        lastApply = result.result;
        return result;
      },
    },
    registry: options.registry,
    signal: options.signal,
    ...(notifyFifoUser ? { notifyFifoUser } : {}),
  });
  await announcer.sync("startup");
  loops.push(observeRoles(announcer, options));
  options.signal.addEventListener("abort", () => applier.close(), { once: true });
  return {
    name: "keepalived",
    announcer,
    notifyFifo: notifyFifoUser !== undefined,
    lastApply: () => lastApply,
    sync: (reason) => announcer.sync(reason),
    setServiceSource: (source) => announcer.setServiceSource(source),
    finished: Promise.all(loops).then(() => undefined),
  };
}

/**
 * A start that does not drive keepalived never writes its file, so a file Keelson rendered with
 * instances (a restart without the reload that would have withdrawn them) is still served, with
 * nothing updating it: say so.
 */
async function warnLeftInstances(file: string): Promise<void> {
  const text = await Deno.readTextFile(file).catch(() => "");
  if (!text.startsWith(GENERATED_HEADER)) return;
  const instances = instancesInFile(text);
  if (instances.size === 0) return;
  logger("keepalived").warn(
    "{file} still holds {count} VRRP instance(s) Keelson rendered (VIPs {vips}); keepalived " +
      "serves them while nothing updates them any more. Stop keepalived on this host " +
      "(systemctl disable --now keepalived), or remove the file and reload keepalived",
    { file, count: instances.size, vips: [...new Set([...instances.values()].flat())].sort() },
  );
}

async function observeRoles(announcer: KeepalivedAnnouncer, options: KeepalivedOptions) {
  const gauge = createVipRoleGauge(options.registry);
  const log = logger("keepalived");
  let warned = false;
  while (!options.signal.aborted) {
    const config = options.config();
    // a withdrawal that keepalived did not take, or whose VIPs stayed, is tried again
    if (announcer.withdrawalFailed) {
      await announcer.sync("retrying the withdrawal").catch(() => undefined);
    }
    // a control-plane VIP announced over BGP is BIRD's: keepalived never holds it; a host out of
    // VRRP renders none, but the VIPs a failed withdrawal has not seen leave are observed (the
    // gauge shows them held rather than claim the host holds nothing)
    const cpVips = config.control_plane.announce === "bgp" ? [] : config.control_plane.vip;
    const vips = announcer.withdrawal()
      ? announcer.leavingVips()
      : [...cpVips, ...(announcer.serviceVips() ?? [])];
    try {
      await observeVipRoles(vips, { interface: config.keepalived.interface, gauge });
      warned = false;
    } catch (error) {
      if (!warned) log.warn("Cannot observe VIPs: {error}", { error: String(error) });
      warned = true;
    }
    await delay(VIP_ROLE_PERIOD_MS, options.signal);
  }
}
