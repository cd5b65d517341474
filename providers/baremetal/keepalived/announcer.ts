/**
 * The announcer: keeps this host's keepalived config equal to what the inventory and the
 * Services' ingress addresses say. It runs on every control-plane host, leader or not, and only
 * reads the API (the leader's allocator writes the addresses; this serves them).
 *
 * Before the Service cache has synced it never drops Service VIPs because of an empty cache: it
 * keeps the Service VIPs of the file already on disk (keepalived keeps serving what it served)
 * and renders everything else from the inventory, so the control-plane VIP comes up, and
 * follows inventory changes, before any cluster exists.
 *
 * A reload that takes this host out of VRRP (`withdrawal.ts`: `[keepalived] enabled = false`, the
 * machine retired, removed or given another role) gives keepalived a file with no VRRP instance,
 * applied like any other, and waits until the VIPs have left the interface; one warning says so
 * and what is left to do. The Service VIPs of the file before it are kept in memory, so a host
 * that comes back before the Service cache has synced serves them again.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../../../src/config/types.ts";
import type { ServiceSource } from "../host_announcer.ts";
import { logger } from "../../../src/log/logging.ts";
import { delay } from "../../../src/kube/delay.ts";
import type { ApplyResult, KeepalivedApplier } from "./config_applier.ts";
import { buildKeepalivedModel, type KeepalivedModelInput } from "./model.ts";
import { readInterfaceAddresses } from "./interface_addresses.ts";
import { renderKeepalivedConfig, renderWithdrawnConfig } from "./render.ts";
import { servedServiceAddresses, type SkippedAddress } from "./served_addresses.ts";
import { instancesInFile } from "./vrrp_state.ts";
import { CoalescedRender } from "../coalesced_render.ts";
import { LocalTrackFiles, type LocalTrackValue } from "./local_track_files.ts";
import { SkippedAddressReport } from "./skipped_address_report.ts";
import { type KeepalivedWithdrawal, keepalivedWithdrawal } from "./withdrawal.ts";
import {
  nextWithdrawalPhase,
  type WithdrawalEvent,
  type WithdrawalPhase,
} from "../withdrawal_phase.ts";
import { readInputFile, RENDERED_FILE } from "../../../src/files/read_input_file.ts";
import { errorMessage } from "../../../src/log/error_message.ts";
import { formatIp, parseIp } from "../../../src/net/ip.ts";
import { ingressIps } from "../ipam/status_holdings.ts";
import { localTrafficHosts } from "../local_traffic.ts";
import type { ServingHold } from "../serving_hold.ts";

export type { ServiceSource } from "../host_announcer.ts";
export type { LocalTrackValue };

/** The Service cache and, when there is one, the EndpointSlice cache. */
export interface KeepalivedServiceSource extends ServiceSource {
  /** Every EndpointSlice once their cache has synced; undefined while not known. */
  endpointSlices?(): readonly unknown[] | undefined;
  /** This host's Node is Ready, or not known (`hostNodeReady`). @default () => true */
  nodeReady?(): boolean;
}

/** Options of `KeepalivedAnnouncer`. */
export interface KeepalivedAnnouncerOptions {
  /** The configuration in force. */
  config: () => Config;
  /** This host's machine name. */
  host: string;
  /**
   * The file keepalived reads (the applier's): its VIPs are kept until the Service cache syncs.
   * The start value: `[keepalived] config_file` is read only at start.
   */
  configFile: string;
  /** Validates, writes and reloads. */
  applier: Pick<KeepalivedApplier, "apply">;
  /** Where `keelson_keepalived_skipped_addresses` is registered. @default not exported */
  registry?: Registry;
  /** The user Keelson runs as, for keepalived's notify FIFO; absent: no FIFO. */
  notifyFifoUser?: string;
  /** Reads an interface's addresses (the withdrawal's confirmation). @default `ip -j addr` */
  readAddresses?: (iface: string) => Promise<string[]>;
  /** Longest wait for withdrawn VIPs to leave the interface. @default 5000 */
  withdrawTimeoutMs?: number;
  /** The agent's stop: ends a wait for withdrawn VIPs at once (shutdown stays within 2 s). */
  signal?: AbortSignal;
}

/** Renders and applies this host's keepalived config whenever its inputs change. */
export class KeepalivedAnnouncer {
  #options: KeepalivedAnnouncerOptions;
  #source: KeepalivedServiceSource | undefined;
  #localTracks = new LocalTrackFiles();
  #log = logger("keepalived", "announcer");
  #lastError = "";
  #render = new CoalescedRender((reason) => this.#syncNow(reason));
  #skipped: SkippedAddressReport;
  #withdrawal: WithdrawalPhase = "serving";
  /** What the log last said about the withdrawal (state and reason), to say each once. */
  #withdrawalLogged = "";
  /** The Service VIPs of the file a withdrawal replaced, until the Service cache has synced. */
  #keptVips: string[] | undefined;
  /** The interface of the last file with instances: where their VIPs are. */
  #servedInterface: string | undefined;
  /** VIPs a withdrawal has not yet seen leave the interface (kept across retries). */
  #leaving = new Set<string>();
  /** The hold (`serving_hold.ts`) the log last named; "" while serving. */
  #holdLogged = "";

  /** @param options config source, host name, applier and registry */
  constructor(options: KeepalivedAnnouncerOptions) {
    this.#options = options;
    this.#skipped = new SkippedAddressReport(options.configFile, options.registry);
  }

  /** Connects the Service cache (when the Kubernetes client exists) and renders. */
  setServiceSource(source: KeepalivedServiceSource | undefined): Promise<ApplyResult | undefined> {
    this.#source = source;
    return this.sync("service source changed");
  }

  /**
   * The Service VIPs this host serves: ingress addresses of the Services Keelson handles,
   * sorted and unique; undefined while the cache has not synced.
   */
  serviceVips(): string[] | undefined {
    if (this.withdrawal()) return [];
    return this.#servedNow()?.vips;
  }

  /**
   * Why this host serves no VIP through keepalived under the configuration in force.
   * @returns the reason, or undefined while it is an active VRRP peer
   */
  withdrawal(): KeepalivedWithdrawal | undefined {
    return keepalivedWithdrawal(this.#options.config(), this.#options.host);
  }

  /** The VIPs a withdrawal has not yet seen leave the interface, sorted (empty once confirmed). */
  leavingVips(): string[] {
    return [...this.#leaving].sort();
  }

  /** Whether the last withdrawal is not confirmed (keepalived did not take the file, or a VIP stayed). */
  get withdrawalFailed(): boolean {
    return this.#withdrawal === "failed";
  }

  #servedNow(): { vips: string[]; skipped: SkippedAddress[] } | undefined {
    const source = this.#source;
    if (!source || !source.hasSynced()) return undefined;
    return servedServiceAddresses(this.#options.config(), source.services.list());
  }

  /**
   * Renders and applies the config. Calls made in one burst, or while the previous render runs,
   * share one render; renders run one at a time in call order (`coalesced_render.ts`): a render
   * before the cache synced reads the file on disk first, and must not hand the applier its stale
   * text after a later, complete render.
   * @param reason for the log
   * @returns the apply result, or undefined when nothing was applied
   */
  sync(reason: string): Promise<ApplyResult | undefined> {
    return this.#render.run(reason);
  }

  async #syncNow(reason: string): Promise<ApplyResult | undefined> {
    const config = this.#options.config();
    const host = this.#options.host;
    const source = this.#source;
    const services = source?.hasSynced() ? source.services.list() : undefined;
    let fileVips: string[] | undefined;
    if (!services && !keepalivedWithdrawal(config, host)) {
      // No synced cache (or no Kubernetes API at all): keep serving the Service VIPs the file
      // on disk holds, so inventory changes (control-plane VIP, peers, timers) still apply.
      const current = await readInputFile(this.#options.configFile, RENDERED_FILE).catch(() => "");
      fileVips = this.#keptVips ?? serviceVipsInFile(current);
      this.#log.debug(
        "Rendering ({reason}) before the Service cache synced: keeping {count} VIPs",
        {
          reason,
          count: fileVips.length,
        },
      );
    }
    const rendered = keepalivedHostFile({
      config,
      host,
      ...(services ? { services } : { fileVips: fileVips ?? [] }),
      ...(this.#options.notifyFifoUser ? { notifyFifoUser: this.#options.notifyFifoUser } : {}),
      ...(services && source?.endpointSlices ? { endpointSlices: source.endpointSlices() } : {}),
      nodeReady: source?.nodeReady?.() ?? true,
    });
    if (rendered.withdrawal) return await this.#withdraw(rendered.withdrawal, config, rendered);
    if (this.#advance({ kind: "back" })) this.#withdrawalLogged = "";
    if ("error" in rendered) {
      if (rendered.error !== this.#lastError) {
        this.#log.error("{error}", { error: rendered.error });
      }
      this.#lastError = rendered.error;
      return undefined;
    }
    this.#lastError = "";
    if (services) this.#keptVips = undefined;
    this.#servedInterface = config.keepalived.interface;
    this.#skipped.report(rendered.skipped);
    this.#reportHold(rendered.withheld);
    // before the file: keepalived reads a track file it newly names at the reload
    await this.#localTracks.write(rendered.localTracks);
    const result = await this.#options.applier.apply(rendered.text);
    // only a file keepalived took ends what an earlier withdrawal left: a VIP it could not remove
    // stays to be seen leaving at the next withdrawal
    if (!tookFile(result)) return result;
    this.#leaving.clear();
    if (this.#advance({ kind: "file-taken" })) {
      this.#log.info("This host serves VIPs through keepalived again ({result}: {message})", {
        result: result.result,
        message: result.message,
      });
    }
    return result;
  }

  /**
   * Gives keepalived a file with no VRRP instance and waits until the VIPs of the file before it
   * have left the interface (keepalived removes them on SIGHUP).
   */
  async #withdraw(
    withdrawal: KeepalivedWithdrawal,
    config: Config,
    rendered: KeepalivedHostFile,
  ): Promise<ApplyResult | undefined> {
    const before = await readInputFile(this.#options.configFile, RENDERED_FILE).catch(() => "");
    this.#keptVips ??= serviceVipsInFile(before);
    for (const vip of [...instancesInFile(before).values()].flat()) this.#leaving.add(vip);
    const held = [...this.#leaving].sort();
    if ("error" in rendered) {
      const message = rendered.error;
      if (message !== this.#lastError) this.#log.error("{error}", { error: message });
      this.#lastError = message;
      this.#advance({ kind: "withdrew", confirmed: false });
      return undefined;
    }
    const text = rendered.text;
    this.#lastError = "";
    this.#skipped.report([]);
    const result = await this.#options.applier.apply(text);
    const iface = this.#servedInterface ?? config.keepalived.interface;
    let problem: string | undefined;
    let gone = "";
    // no keepalived running holds no instance: the interface still says whether VIPs stayed
    // (a killed keepalived leaves them), and a keepalived started later reads this file
    if (!tookFile(result) && result.result !== "not_running") {
      problem = `keepalived did not take the file (${result.result}: ${result.message})`;
    } else {
      const wait = await this.#waitGone(held, iface);
      if ("error" in wait) problem = wait.error;
      else if (wait.left.length > 0) {
        problem = `${wait.left.join(", ")} still on ${iface} after ${wait.ms} ms`;
      } else {
        this.#leaving.clear();
        gone = held.length === 0
          ? `no VIP was rendered for it`
          : `${held.length} VIP(s) not on ${iface} ${wait.ms} ms after it`;
      }
    }
    this.#advance({ kind: "withdrew", confirmed: problem === undefined });
    const key = `${this.#withdrawal} ${withdrawal.reason}`;
    if (key === this.#withdrawalLogged) return result;
    this.#withdrawalLogged = key;
    const advice = withdrawal.restartNeeded
      ? "Restart keelson to apply the new setting (it then no longer drives keepalived here, " +
        "which keeps running this file), and stop keepalived if this host no longer needs it " +
        "(systemctl disable --now keepalived)"
      : "The file stays without instances while the machine is retired and serves again once " +
        "it is active; stop keepalived when the machine is decommissioned " +
        "(systemctl disable --now keepalived)";
    if (problem) {
      this.#log.error(
        "This host must serve no VIP through keepalived ({why}), but {problem}; keepalived may " +
          "still hold this host's VIPs while the other hosts serve them; retrying every 10 s",
        { why: withdrawal.reason, problem, vips: held },
      );
    } else {
      this.#log.warn(
        "This host no longer serves VIPs through keepalived ({why}): its keepalived file has " +
          "no VRRP instance ({message}); {gone}; the other control-plane hosts serve them. " +
          "{advice}",
        { why: withdrawal.reason, message: result.message, gone, advice, vips: held },
      );
    }
    return result;
  }

  /**
   * Moves the withdrawal phase on `event` (`nextWithdrawalPhase`).
   * @returns whether the phase changed
   */
  #advance(event: WithdrawalEvent): boolean {
    const before = this.#withdrawal;
    this.#withdrawal = nextWithdrawalPhase(before, event);
    return this.#withdrawal !== before;
  }

  /** Polls the interface until none of `vips` is on it, for at most `withdrawTimeoutMs`. */
  async #waitGone(
    vips: readonly string[],
    iface: string,
  ): Promise<{ left: string[]; ms: number } | { error: string }> {
    const read = this.#options.readAddresses ??
      ((name: string) => readInterfaceAddresses({ interface: name }));
    // nothing to see leave (a withdrawn file re-applied on a Service event): no `ip` run
    if (vips.length === 0) return { left: [], ms: 0 };
    const timeoutMs = this.#options.withdrawTimeoutMs ?? 5000;
    const start = performance.now();
    for (;;) {
      let present: Set<string>;
      try {
        present = new Set(await read(iface));
      } catch (error) {
        return { error: `cannot confirm that the VIPs left ${iface}: ${String(error)}` };
      }
      const left = vips.filter((v) => present.has(v));
      const ms = Math.round(performance.now() - start);
      if (left.length === 0 || ms >= timeoutMs || this.#options.signal?.aborted) {
        return { left, ms };
      }
      await delay(50, this.#options.signal);
    }
  }

  /** One line when this host starts holding its VIPs back (and why), and one when it stops. */
  #reportHold(hold: ServingHold | undefined): void {
    const now = hold === undefined
      ? ""
      : `${hold.reason}\n${hold.controlPlane ? "all" : "services"}`;
    if (now === this.#holdLogged) return;
    if (hold !== undefined) {
      this.#log.warn("This host holds back {what} through keepalived: {reason}", {
        what: hold.controlPlane ? "every VIP" : "its Service VIPs",
        reason: hold.reason,
      });
    } else if (this.#holdLogged !== "") {
      this.#log.info("This host serves its VIPs through keepalived again");
    }
    this.#holdLogged = now;
  }
}

/** The text of one host's keepalived file, with the VIPs left out. */
export interface RenderedHostConfig {
  text: string;
  skipped: { value: string; reason: string }[];
  /** The values of its Service groups' Local-traffic files. */
  localTracks: LocalTrackValue[];
  /** Why this host holds VIPs back (`serving_hold.ts`); absent: it does not. */
  withheld?: ServingHold;
}

/**
 * Builds and renders one host's keepalived file: what the announcer applies, and what
 * `keelson render keepalived` prints. Pure.
 * @param input the configuration, host, Service VIPs and the apiserver-health starting value
 * @returns the text and the skipped VIPs, or `{ error }` naming the field and value
 */
export function renderHostKeepalived(
  input: KeepalivedModelInput,
): RenderedHostConfig | { error: string } {
  const model = buildKeepalivedModel(input);
  if ("error" in model) return model;
  const localTracks = model.instances.flatMap((i) =>
    i.trackLocal
      ? [{ path: i.trackLocal.path, value: i.trackLocal.lowered ? 1 as const : 0 as const }]
      : []
  );
  return {
    text: renderKeepalivedConfig(model),
    skipped: model.skipped,
    localTracks,
    ...(model.withheld ? { withheld: model.withheld } : {}),
  };
}

/** The inputs of one host's keepalived file, wherever they were read from. */
export interface KeepalivedHostInputs {
  config: Config;
  /** This machine's name. */
  host: string;
  /** Every Service, once the cache has synced; absent: `fileVips` are served. */
  services?: readonly V1Service[];
  /** The Service VIPs of the file on disk, served until the Service cache syncs. */
  fileVips?: readonly string[];
  /** The user Keelson runs as, owner of keepalived's notify FIFO; absent: no FIFO. */
  notifyFifoUser?: string;
  /**
   * Every EndpointSlice, once their cache has synced; absent: not known, so no
   * `externalTrafficPolicy: Local` group is lowered on this host.
   */
  endpointSlices?: readonly unknown[];
  /** This host's Node is Ready, or not known (`nodeIsReady`). @default true */
  nodeReady?: boolean;
}

/**
 * One host's keepalived file, with the addresses left out and the values of its Local-traffic
 * files; `withdrawal` says why the host is out of VRRP (the file then has no instance).
 */
export type KeepalivedHostFile =
  & ({
    text: string;
    skipped: SkippedAddress[];
    localTracks: LocalTrackValue[];
    withheld?: ServingHold;
  } | {
    error: string;
  })
  & { withdrawal?: KeepalivedWithdrawal };

/**
 * One host's keepalived file from its inputs: the one pipeline of the announcer and of
 * `keelson render keepalived`. Pure.
 * @param input what the host knows
 * @returns the text and the skipped addresses, or `{ error }`; with `withdrawal` when the host
 *   serves nothing through keepalived
 */
export function keepalivedHostFile(input: KeepalivedHostInputs): KeepalivedHostFile {
  const { config, host } = input;
  const withdrawal = keepalivedWithdrawal(config, host);
  try {
    if (withdrawal) {
      return { text: renderWithdrawnConfig(host), skipped: [], localTracks: [], withdrawal };
    }
    const served = input.services ? servedServiceAddresses(config, input.services) : undefined;
    const rendered = renderHostKeepalived({
      config,
      host,
      serviceVips: served?.vips ?? input.fileVips ?? [],
      ...(input.notifyFifoUser ? { notifyFifoUser: input.notifyFifoUser } : {}),
      ...(input.services
        ? { localVips: localServiceVips(host, input.services, input.endpointSlices) }
        : {}),
      ...(input.nodeReady !== undefined ? { nodeReady: input.nodeReady } : {}),
    });
    if ("error" in rendered) return rendered;
    // served addresses were checked once already; the file's are checked by the model
    return {
      text: rendered.text,
      skipped: served ? served.skipped : rendered.skipped,
      localTracks: rendered.localTracks,
      ...(rendered.withheld ? { withheld: rendered.withheld } : {}),
    };
  } catch (error) {
    // render refuses (throws) rather than write anything doubtful
    return {
      error: `Cannot render keepalived: ${errorMessage(error)}`,
      ...(withdrawal ? { withdrawal } : {}),
    };
  }
}

/**
 * The `externalTrafficPolicy: Local` Service VIPs, each with whether `host` may hold it
 * (`localTrafficHosts`: a ready endpoint of its Service on the host). Readiness of the Node is
 * left to the endpoints: a Node that is not Ready has its endpoints marked not ready.
 * @param host this host's machine name (its Node's name)
 * @param services every Service
 * @param endpointSlices every EndpointSlice; undefined while not known
 * @returns canonical address text to the verdict, undefined when not known
 */
export function localServiceVips(
  host: string,
  services: readonly V1Service[],
  endpointSlices: readonly unknown[] | undefined,
): Map<string, boolean | undefined> {
  const vips = new Map<string, boolean | undefined>();
  for (const service of services) {
    if (service.spec?.externalTrafficPolicy !== "Local") continue;
    const decision = localTrafficHosts({
      service,
      endpointSlices,
      nodes: [],
      servingHosts: [host],
    });
    const here = decision.endpointsKnown ? decision.hosts.includes(host) : undefined;
    for (const text of ingressIps(service)) {
      const ip = parseIp(text);
      if (!ip) continue;
      const key = formatIp(ip.family, ip.value);
      // an address shared by Services (allow-shared-ip): any of them with an endpoint here
      vips.set(key, vips.has(key) ? eitherHeld(vips.get(key), here) : here);
    }
  }
  return vips;
}

/** Whether a host may hold an address two Services share: yes if either says so. */
function eitherHeld(a: boolean | undefined, b: boolean | undefined): boolean | undefined {
  if (a === true || b === true) return true;
  return a === undefined || b === undefined ? undefined : false;
}

/**
 * The Service instances of a file rendered by Keelson that track their Local-traffic file.
 * @param text a keepalived file written by Keelson
 * @returns instance names (`keelson_v4_g3`)
 */
export function localTrackedInstancesInFile(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^track_file keelson_local_(v[46]_g\d{1,3}) \{$/gm)) {
    names.add(`keelson_${m[1]}`);
  }
  return names;
}

/**
 * The Service VIPs a file rendered by Keelson holds (the `keelson_v4_g*`/`keelson_v6_g*`
 * instances, listed and excluded). Only address-shaped tokens are returned; the model parses
 * them again, so nothing else of the file can reach the next render.
 * @param text a keepalived file written by Keelson (anything else yields fewer or no VIPs)
 * @returns the addresses, in file order
 */
export function serviceVipsInFile(text: string): string[] {
  // the one reader of Keelson's keepalived file (vrrp_state.ts), keeping the Service groups
  return [...instancesInFile(text)]
    .filter(([name]) => /^keelson_v[46]_g\d{1,3}$/.test(name))
    .flatMap(([, vips]) => vips);
}

/**
 * Whether keepalived has the text now (written and reloaded, or already in force); not when no
 * keepalived runs to read it (`not_running`).
 */
function tookFile(result: ApplyResult): boolean {
  return result.result === "success" || result.result === "unchanged";
}
