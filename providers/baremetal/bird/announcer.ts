/**
 * The BIRD announcer: keeps this host's BIRD file equal to what the inventory, the Services'
 * ingress addresses, the Nodes' pod CIDRs and this host's health say. It runs on every
 * control-plane host, leader or not, and only reads the API. Same shape as the keepalived
 * announcer: `setServiceSource`, `sync(reason)`, a shared render per burst.
 *
 * - `externalTrafficPolicy: Cluster`: every healthy host announces every VIP of a BGP pool, so
 *   the routers spread flows over all of them (ECMP) and kube-proxy forwards.
 * - `externalTrafficPolicy: Local`: a host announces the VIP only while its own Node has a ready
 *   endpoint of the Service; kube-proxy drops Local traffic on a host without one, so announcing
 *   from there would black-hole a share of the flows. (Announcing a worker's InternalIP as
 *   third-party next hop is not done: one path per session without ADD-PATH, only on the
 *   router's segment, and Keelson cannot see a worker's kube-proxy health.)
 * - Withdraw (`serving_hold.ts`): `drain()` (SIGTERM, before exit) and a machine not `active`
 *   render no Service VIP and no control-plane VIP; a Node that is not Ready (`healthy()` false)
 *   renders no Service VIP and keeps the control-plane VIP with the apiserver; sessions stay up.
 * - The control-plane VIP is announced only while `controlPlaneHealthy()` (the local
 *   kube-apiserver's /readyz), from the inventory alone, before any Kubernetes API is reachable.
 * - Before the Service cache has synced it keeps the VIPs of the file BIRD started with (read
 *   once, so a withdrawal in between does not lose them).
 * - `[bgp]` removed at a reload (or this machine no longer a control-plane one): BIRD keeps
 *   running until keelson restarts, so every render from then on announces nothing: no VIPs, no
 *   control-plane VIP, no pod routes, the peers of the last configuration with `[bgp]` kept with
 *   an export filter that rejects everything. The routers get an explicit withdrawal (an UPDATE),
 *   whatever their graceful-restart handling of a closed session (with RFC 8538 a Cease keeps the
 *   routes for the restart time); the sessions stay up, so routers raise no peer-down alarm and a
 *   `[bgp]` brought back resumes over them at once. Starting BIRD's side needs a restart.
 *
 * @module
 */
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { readBgpSecrets } from "../../../src/config/bgp_secrets.ts";
import { runsBird } from "../../../src/config/restart_settings.ts";
import type { Config } from "../../../src/config/types.ts";
import type { Lister } from "../../../src/kube/ports.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import { logger } from "../../../src/log/logging.ts";
import { ingressIps } from "../ipam/status_holdings.ts";
import type { BirdApplyResult } from "./config_applier.ts";
import { CoalescedRender } from "../coalesced_render.ts";
import { birdHostFile, serviceVipsInBirdFile } from "./host_config.ts";
import { announcedVips, type BirdModel } from "./model.ts";
import { readInputFile, RENDERED_FILE } from "../../../src/files/read_input_file.ts";
import {
  nextWithdrawalPhase,
  type WithdrawalEvent,
  type WithdrawalPhase,
} from "../withdrawal_phase.ts";

/** Where the announcer reads Services and Nodes from, once a Kubernetes connection exists. */
export interface BirdClusterSource {
  services: Lister<V1Service>;
  nodes: Lister<V1Node>;
  hasSynced(): boolean;
  /** Node names of a Service's ready endpoints; undefined while unknown. */
  endpointNodeNames?(service: V1Service): string[] | undefined;
}

/** Options of `BirdAnnouncer`. */
export interface BirdAnnouncerOptions {
  config: () => Config;
  /**
   * The file BIRD was started with (`bird -c`, the applier's file): its VIPs are kept until the
   * Service cache syncs. The start value: `[bgp] config_file` is read only at start.
   */
  configFile: string;
  /** This host's machine name (= its Node name). */
  host: string;
  /** Validates, writes and configures. */
  applier: { apply(text: string): Promise<BirdApplyResult> };
  /** The local kube-apiserver is ready. @default () => false */
  controlPlaneHealthy?: () => boolean;
  /** This host may attract Service traffic. @default () => true */
  healthy?: () => boolean;
  /** Whether this host runs the route controller's pod routes. @default () => true */
  podRoutesEnabled?: () => boolean;
  /** Reads the peers' passwords. @default readBgpSecrets */
  readPasswords?: (config: Config) => Promise<ReadonlyMap<string, string>>;
  /** Told of each Service whose VIPs this host starts announcing. */
  onAnnounced?: (service: V1Service, vips: string[]) => void;
  /** Told after every render BIRD accepted (`configure` answered, or the text already in force). */
  onConfigured?: () => void;
}

/** Renders and applies this host's BIRD file whenever its inputs change. */
export class BirdAnnouncer {
  #options: BirdAnnouncerOptions;
  #source: BirdClusterSource | undefined;
  #log = logger("bird", "announcer");
  #lastError = "";
  #render = new CoalescedRender((reason) => this.#syncNow(reason));
  #draining = false;
  #passwords = new Map<string, string>();
  #model: BirdModel | undefined;
  #configuredModel: BirdModel | undefined;
  #announced = new Set<string>();
  /** The last configuration that has `[bgp]` for this host. */
  #birdConfig: Config | undefined;
  /** The Service VIPs of the file BIRD started with, kept until the caches sync. */
  #startVips: string[] | undefined;
  /** The skipped values (`value reason`) the log has named and that are still skipped. */
  #skippedLogged = new Set<string>();
  /** Where a `[bgp]` removed at a reload stands (`withdrawal_phase.ts`): each change said once. */
  #removal: WithdrawalPhase = "serving";

  /** @param options config source, host, applier and health callbacks */
  constructor(options: BirdAnnouncerOptions) {
    this.#options = options;
  }

  /** The model of the last text handed to the applier. */
  get model(): BirdModel | undefined {
    return this.#model;
  }

  /** The model of the last text BIRD accepted through `configure`. */
  get configuredModel(): BirdModel | undefined {
    return this.#configuredModel;
  }

  /**
   * The configuration BIRD's file is rendered from: the live one while it has `[bgp]` for this
   * host, else the last one that had (its peers stay, announcing nothing).
   * @returns undefined when no configuration seen had `[bgp]` for this host
   */
  birdConfig(): Config | undefined {
    const live = this.#options.config();
    if (runsBird(live, this.#options.host)) this.#birdConfig = live;
    return this.#birdConfig;
  }

  /**
   * Whether a reload removed `[bgp]` (or made this machine other than a control-plane one) after
   * BIRD's side started: every render withdraws everything until `[bgp]` is back or a restart.
   */
  get bgpRemoved(): boolean {
    return this.birdConfig() !== undefined &&
      !runsBird(this.#options.config(), this.#options.host);
  }

  /** Connects the Service and Node caches and renders. */
  setClusterSource(source: BirdClusterSource | undefined): Promise<BirdApplyResult | undefined> {
    this.#source = source;
    return this.sync("cluster source changed");
  }

  /**
   * Withdraws every VIP (sessions stay up) and waits until BIRD has the file; further syncs keep
   * them withdrawn.
   * @returns the apply result
   */
  async drain(): Promise<BirdApplyResult | undefined> {
    this.#draining = true;
    return await this.sync("draining");
  }

  /**
   * Renders and applies. Calls made in one burst, or while the previous render runs, share one
   * render; renders run one at a time in call order (`coalesced_render.ts`).
   * @param reason for the log
   */
  sync(reason: string): Promise<BirdApplyResult | undefined> {
    return this.#render.run(reason);
  }

  async #syncNow(reason: string): Promise<BirdApplyResult | undefined> {
    const config = this.birdConfig();
    if (!config) return undefined;
    const source = this.#source;
    const synced = source?.hasSynced() ?? false;
    let fileVips: string[] = [];
    let services: V1Service[] | undefined;
    if (!this.bgpRemoved) {
      // a removed [bgp] keeps the last good keys: its password files may be gone with it
      await this.#refreshPasswords(config);
      if (synced) {
        services = source!.services.list();
      } else {
        // read once: a later file may have none (a withdrawal) and must not lose them for good
        this.#startVips ??= serviceVipsInBirdFile(
          await readInputFile(this.#options.configFile, RENDERED_FILE).catch(() => ""),
        );
        fileVips = this.#startVips;
      }
    }
    // read after the awaits, as the draining flag: a reload removing [bgp] meanwhile wins
    const removed = this.bgpRemoved;
    const podsOn = !removed && (this.#options.podRoutesEnabled?.() ?? true);
    const endpointNodeNames = source?.endpointNodeNames?.bind(source);
    const rendered = birdHostFile({
      config,
      host: this.#options.host,
      ...(services && !removed ? { services } : { fileVips: removed ? [] : fileVips }),
      nodes: synced && podsOn ? source!.nodes.list() : [],
      ...(endpointNodeNames ? { endpointNodeNames } : {}),
      nodeReady: this.#options.healthy?.() ?? true,
      draining: this.#draining,
      removed,
      controlPlaneHealthy: this.#options.controlPlaneHealthy?.() ?? false,
      passwords: this.#passwords,
    });
    if ("error" in rendered) {
      if (rendered.error !== this.#lastError) this.#log.error("{error}", { error: rendered.error });
      this.#lastError = rendered.error;
      return undefined;
    }
    this.#lastError = "";
    // each once while it lasts: a refused Node's CIDR is skipped again at every render (every
    // Node event, every 30 s), and its Node's FailedToCreateRoute Events repeat it already
    const skipped = new Set<string>();
    for (const entry of rendered.skipped) {
      const key = `${entry.value}\n${entry.reason}`;
      skipped.add(key);
      if (!this.#skippedLogged.has(key)) {
        this.#log.warn("Not announcing {value}: {reason}", { ...entry });
      }
    }
    this.#skippedLogged = skipped;
    this.#log.debug("Rendering BIRD ({reason})", { reason });
    this.#model = rendered.model;
    const result = await this.#options.applier.apply(rendered.text);
    if (result.configured) {
      this.#configuredModel = rendered.model;
      this.#reportAnnounced(config, services ?? [], rendered.model);
      this.#options.onConfigured?.();
    }
    this.#logRemoval(removed, rendered.model, result);
    return result;
  }

  /** One line when a removed `[bgp]` is withdrawn (or cannot be yet), and when it is back. */
  #logRemoval(removed: boolean, model: BirdModel, result: BirdApplyResult): void {
    if (!removed) {
      this.#advance({ kind: "back" });
      // said once BIRD took a file announcing again (a refused one is logged by the applier)
      if (result.configured && this.#advance({ kind: "file-taken" })) {
        this.#log.info("[bgp] is back in the configuration: announcing again ({message})", {
          message: result.message,
        });
      }
      return;
    }
    if (!this.#advance({ kind: "withdrew", confirmed: result.configured })) return;
    const peers = model.peers.map((p) => p.label).join(", ") || "none";
    if (result.configured) {
      this.#log.warn(
        "[bgp] is no longer in the configuration for this host: withdrew every route BIRD " +
          "announced from here (Service VIPs, the control-plane VIP, pod routes; {message}); " +
          "BIRD keeps its sessions to {peers}, announcing nothing. Restart keelson to apply the " +
          "new setting (it then leaves BIRD alone), and stop BIRD if this host no longer needs " +
          "it (systemctl disable --now bird)",
        { message: result.message, peers },
      );
    } else {
      this.#log.error(
        "[bgp] is no longer in the configuration for this host, but BIRD did not take the " +
          "withdrawing file ({message}); it may still announce this host's routes; retrying " +
          "at every render (at least every 30 s)",
        { message: result.message },
      );
    }
  }

  /**
   * Moves the removal's phase on `event` (`nextWithdrawalPhase`).
   * @returns whether the phase changed
   */
  #advance(event: WithdrawalEvent): boolean {
    const before = this.#removal;
    this.#removal = nextWithdrawalPhase(before, event);
    return this.#removal !== before;
  }

  /**
   * Re-reads the password files on every render (a rotated key applies at the next sync). A file
   * that became unreadable or invalid keeps its last good key, so a bad edit never drops the
   * session; `keelson check` names the problem.
   */
  async #refreshPasswords(config: Config): Promise<void> {
    const fresh = await (this.#options.readPasswords ??
      (async (c: Config) => (await readBgpSecrets(c)).passwords))(config);
    const next = new Map<string, string>();
    for (const peer of config.bgp?.peers ?? []) {
      const file = peer.password_file;
      if (file === undefined || next.has(file)) continue;
      const value = fresh.get(file) ?? this.#passwords.get(file);
      if (value === undefined) continue;
      if (!fresh.has(file)) {
        this.#log.error(
          "Cannot use the password in {file} (peer {peer}); keeping the last good one " +
            "(keelson check --config says why)",
          { file, peer: peer.name },
        );
      }
      next.set(file, value);
    }
    this.#passwords = next;
  }

  #reportAnnounced(config: Config, services: readonly V1Service[], model: BirdModel): void {
    const now = new Set(announcedVips(model));
    const onAnnounced = this.#options.onAnnounced;
    if (onAnnounced) {
      for (const service of services) {
        if (!handlesService(config, service)) continue;
        const fresh = ingressIps(service).filter((ip) => now.has(ip) && !this.#announced.has(ip));
        if (fresh.length > 0) onAnnounced(service, fresh);
      }
    }
    this.#announced = now;
  }
}
