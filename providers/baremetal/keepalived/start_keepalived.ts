/**
 * keepalived on a control-plane host: the announcer that renders and applies the config, the
 * kube-apiserver probe behind the control-plane VIP, and the VIP-role gauge. Needs no
 * Kubernetes API, so the control-plane VIP comes up before the cluster exists. The VRIDs, peers
 * and priorities are chosen in `model.ts`; `render.ts` turns that model into keepalived's syntax.
 *
 * @module
 */
import { stagedPaths } from "../../../src/config/stage_dir.ts";
import type { V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../../../src/config/types.ts";
import { runsKeepalived } from "../../../src/config/restart_settings.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import { delay } from "../../../src/kube/delay.ts";
import type { Informer } from "../../../src/kube/ports.ts";
import { logger } from "../../../src/log/logging.ts";
import { canonicalIp } from "../../../src/net/ip.ts";
import {
  type Announcer,
  type AnnouncerDataPlane,
  type HostAnnouncer,
  syncFailed,
} from "../host_announcer.ts";
import { ApiserverProbe } from "../control_plane/apiserver_probe.ts";
import { LifecycleStage } from "../lifecycle_stage.ts";
import { hostNodeReady, nodeIsReady } from "../serving_hold.ts";
import { KeepalivedAnnouncer } from "./announcer.ts";
import { type ApplyOutcome, KeepalivedApplier } from "./config_applier.ts";
import { rememberLastApply } from "../last_apply.ts";
import { currentUser } from "./current_user.ts";
import { readInterfaceAddresses } from "./interface_addresses.ts";
import { APISERVER_TRACK_FILE } from "./model.ts";
import { daemonPaths } from "../../../src/config/daemon_dir.ts";
import { KEEPALIVED_RENDER_USAGE, renderKeepalivedFile } from "./render_file.ts";
import { GENERATED_HEADER } from "./render.ts";
import { announcingInstances, instancesInFile, VrrpStateTracker } from "./vrrp_state.ts";
import { createVipRoleGauge, observeVipRoles } from "./vip_roles.ts";
import { readInputFile, RENDERED_FILE } from "../../../src/files/read_input_file.ts";

/** Options of `startKeepalived`. */
export interface KeepalivedOptions {
  config: () => Config;
  host: string;
  registry: Registry;
  signal: AbortSignal;
}

/** keepalived, as the provider's host side starts it and `keelson render` renders its file. */
export const KEEPALIVED: Announcer = {
  name: "keepalived",
  announce: "vrrp",
  start: (options) => startKeepalived(options),
  renderFile: (request, config) => Promise.resolve(renderKeepalivedFile(request, config)),
  render: { usage: KEEPALIVED_RENDER_USAGE, flags: ["fifo-user"] },
};

/** The running keepalived side: one of the provider's host announcers. */
export interface RunningKeepalived extends HostAnnouncer {
  announcer: KeepalivedAnnouncer;
  /** Whether keepalived was told to write its notify FIFO (the user Keelson runs as is known). */
  notifyFifo: boolean;
  /** Outcome of the last apply ("none" before the first). */
  lastApply: () => ApplyOutcome | "none";
  /**
   * keepalived opened its notify FIFO (it started, or reloaded): a file written while no
   * keepalived ran is reloaded now, so the outcome stops saying `not_running`.
   */
  onStarted: () => void;
}

const VIP_ROLE_PERIOD_MS = 10_000;

/**
 * Starts the keepalived side when this host is a control-plane machine or serves a VRRP pool and
 * `[keepalived]` is enabled; otherwise logs why not and returns undefined.
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
      "Host {host} is neither a control-plane machine of the inventory nor selected by a VRRP " +
        "pool's served_by: not rendering keepalived",
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
    // the agent stages; the root step (keelson apply-host-config) installs and reloads
    stagedFile: stagedPaths(config).keepalived,
    registry: options.registry,
  });
  const loops: Promise<void>[] = [];
  // the control-plane VIP is held by control-plane machines only; a worker serving pools has no
  // local apiserver to probe
  const controlPlane = config.machines.some((m) =>
    m.name === options.host && m.role === "control-plane"
  );
  if (config.control_plane.vip.length > 0 && controlPlane) {
    const probe = new ApiserverProbe({
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
  // the outcome of the last apply, for the heartbeat and the restart check below
  const remembering = rememberLastApply(applier);
  const lastApply = remembering.last;
  const announcer = new KeepalivedAnnouncer({
    config: options.config,
    // the file paths are read only here (README: start-only settings)
    configFile: ka.config_file,
    host: options.host,
    applier: remembering,
    registry: options.registry,
    signal: options.signal,
    ...(notifyFifoUser ? { notifyFifoUser } : {}),
  });
  await announcer.sync("startup");
  const failed = syncFailed("keepalived", options.registry);
  loops.push(observeRoles(announcer, lastApply, options));
  options.signal.addEventListener("abort", () => applier.close(), { once: true });
  const onStarted = () => {
    if (lastApply() === "not_running") announcer.sync("keepalived started").catch(failed);
  };
  // the Service cache, once connected (for the `service` label)
  const connected = new LifecycleStage<Informer<V1Service>>();
  const tracked = trackDataPlane({
    options,
    notifyFifo: notifyFifoUser !== undefined,
    services: () => connected.current,
    lastApply,
    onStarted,
  });
  const named = [
    ["keepalived side", Promise.all(loops)],
    ["VRRP state tracker (notify FIFO, interface addresses)", tracked.finished],
  ] as const;
  return {
    name: "keepalived",
    announcer,
    notifyFifo: notifyFifoUser !== undefined,
    lastApply,
    onStarted,
    sync: (reason) => announcer.sync(reason),
    connect(context) {
      const { services: informer, signal } = context;
      connected.begin(informer);
      informer.subscribe(() => {
        announcer.sync("services changed").catch(failed);
      });
      // externalTrafficPolicy Local: a group's priority here follows where endpoints run
      const slices = context.endpointSlices;
      slices?.subscribe(() => {
        announcer.sync("endpoints changed").catch(failed);
      });
      // a serving host whose Node is not Ready holds its Service VIPs back (serving_hold.ts);
      // only a change of this host's readiness re-renders, not every Node heartbeat
      const nodes = context.nodes;
      const host = options.host;
      nodes.subscribe((event) => {
        if (event.object.metadata?.name !== host) return;
        const before = event.old === undefined || nodeIsReady(event.old);
        const now = event.type === "delete" || nodeIsReady(event.object);
        if (before !== now || event.type !== "update") {
          announcer.sync("this host's Node readiness changed").catch(failed);
        }
      });
      informer.waitForSync(signal).then((ok) => {
        if (!ok) return;
        return announcer.setServiceSource({
          services: informer,
          hasSynced: () => informer.hasSynced(),
          ...(slices
            ? { endpointSlices: () => slices.hasSynced() ? slices.list() : undefined }
            : {}),
          nodeReady: () => hostNodeReady(nodes, host),
        });
      }).catch(failed);
    },
    dataPlane: tracked.dataPlane,
    loops: named,
    finished: Promise.all(named.map(([, loop]) => loop)).then(() => undefined),
  };
}

/**
 * Follows keepalived's notify FIFO and the interface's addresses (`vrrp_state.ts`).
 * @returns keepalived's share of the data plane and the tracker's loop
 */
function trackDataPlane(inputs: {
  options: KeepalivedOptions;
  notifyFifo: boolean;
  /** The Service cache once connected (for the `service` label). */
  services: () => Informer<V1Service> | undefined;
  lastApply: () => ApplyOutcome | "none";
  onStarted: () => void;
}): { dataPlane: AnnouncerDataPlane; finished: Promise<void> } {
  const { options } = inputs;
  // start-only settings (config/restart_settings.ts): read once, as startKeepalived does
  const configFile = options.config().keepalived.config_file;
  const fifoPath = daemonPaths(options.config()).notifyFifo;
  const tracker = new VrrpStateTracker({
    registry: options.registry,
    interface: () => options.config().keepalived.interface,
    ...(inputs.notifyFifo ? { fifoPath } : {}),
    configFile: () => configFile,
    servicesOf: (vip) => {
      const keys: string[] = [];
      for (const s of inputs.services()?.list() ?? []) {
        if (!handlesService(options.config(), s)) continue;
        const ips = (s.status?.loadBalancer?.ingress ?? []).map((i) => canonicalIp(i.ip ?? ""));
        if (ips.includes(vip)) keys.push(`${s.metadata?.namespace}/${s.metadata?.name}`);
      }
      return keys.sort();
    },
    readAddresses: (iface) => readInterfaceAddresses({ interface: iface }),
    onKeepalivedStarted: () => inputs.onStarted(),
  });
  return {
    dataPlane: {
      snapshot: () => {
        const vrrp = tracker.snapshot();
        return {
          instances: announcingInstances(vrrp.instances, KEEPALIVED.name),
          vips: vrrp.vips,
        };
      },
      subscribe: (listener) => tracker.subscribe(listener),
      lastApply: () => inputs.lastApply(),
    },
    finished: tracker.run(options.signal),
  };
}

/**
 * A start that does not drive keepalived never writes its file, so a file Keelson rendered with
 * instances (a restart without the reload that would have withdrawn them) is still served, with
 * nothing updating it: say so.
 */
async function warnLeftInstances(file: string): Promise<void> {
  const text = await readInputFile(file, RENDERED_FILE).catch(() => "");
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

async function observeRoles(
  announcer: KeepalivedAnnouncer,
  lastApply: () => ApplyOutcome | "none",
  options: KeepalivedOptions,
) {
  const gauge = createVipRoleGauge(options.registry);
  const log = logger("keepalived");
  let warned = false;
  while (!options.signal.aborted) {
    const config = options.config();
    // a withdrawal that keepalived did not take, or whose VIPs stayed, is tried again; a file
    // written while no keepalived ran is reloaded once one runs, so the outcome stops saying so
    if (announcer.withdrawalFailed) {
      await announcer.sync("retrying the withdrawal").catch(
        syncFailed("keepalived", options.registry),
      );
    } else if (lastApply() === "not_running") {
      await announcer.sync("keepalived was not running").catch(
        syncFailed("keepalived", options.registry),
      );
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
