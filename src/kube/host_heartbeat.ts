/**
 * The per-host heartbeat: a Lease `kube-system/keelson-host-<host>` that only this host writes,
 * renewed every few seconds and at once when its data plane changes, carrying the host's report
 * (`src/status/host_report.ts`) in one annotation. As kubelets' node Leases, it lets anyone with
 * read access see which hosts are alive and what each serves; the leader derives from them which
 * host serves each VIP.
 *
 * @module
 */
import { MicroTime as V1MicroTime } from "./micro_time.ts";
import type { V1Lease } from "@kubernetes/client-node";
import { logger } from "../log/logging.ts";
import {
  encodeHostReport,
  HEARTBEAT_LABEL,
  heartbeatLeaseName,
  HOST_REPORT_ANNOTATION,
  type HostReport,
} from "../status/host_report.ts";
import { isConflict } from "./ports.ts";
import type { LeaseApi } from "./lease_api.ts";
import { delay } from "./delay.ts";
import { Wakeable } from "./wakeable_delay.ts";

/** Options of `HostHeartbeat`. */
export interface HostHeartbeatOptions {
  leases: LeaseApi;
  /** This host's machine name. */
  host: string;
  /** @default "kube-system" */
  namespace?: string;
  /** The report to publish now. */
  report: () => Promise<HostReport>;
  /** Renew period. @default 5000 */
  renewMs?: number;
  /** `leaseDurationSeconds`: a host silent longer than this is reported missing. @default 15 */
  leaseDurationSeconds?: number;
  /** Changes within this window share one write. @default 50 */
  debounceMs?: number;
  /** Current time. @default Date.now */
  now?: () => number;
}

/** Writes this host's heartbeat Lease until stopped. */
export class HostHeartbeat {
  #options: HostHeartbeatOptions;
  #log = logger("kube", "heartbeat");
  #current: V1Lease | undefined;
  #wakeable = new Wakeable();
  #lastError = "";
  /** Time of the last successful write (ms), for health and tests. */
  lastWriteMs = 0;

  /** @param options Lease port, host, report source and timings */
  constructor(options: HostHeartbeatOptions) {
    this.#options = options;
  }

  /** Asks for a write soon (the data plane changed). */
  changed(): void {
    this.#wakeable.wake();
  }

  /**
   * Renews until `signal` aborts. Never rejects; errors are logged once per distinct message.
   * @param signal stops it
   */
  async run(signal: AbortSignal): Promise<void> {
    const renewMs = this.#options.renewMs ?? 5000;
    while (!signal.aborted) {
      try {
        await this.writeOnce();
        if (this.#lastError) this.#log.info("Heartbeat written again");
        this.#lastError = "";
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (message !== this.#lastError) {
          this.#log.warn("Cannot write heartbeat Lease {name}: {error}", {
            name: heartbeatLeaseName(this.#options.host),
            error: message,
          });
        }
        this.#lastError = message;
      }
      // woken by a change: let a burst of changes settle into one write
      if (await this.#wakeable.wait(renewMs, signal)) {
        await delay(this.#options.debounceMs ?? 50, signal);
      }
    }
  }

  /**
   * Writes the Lease once: create when missing, else replace (a conflict re-reads and retries).
   * @throws {Error} on an API error, or a report that does not validate
   */
  async writeOnce(): Promise<void> {
    const { leases, host } = this.#options;
    const namespace = this.#options.namespace ?? "kube-system";
    const name = heartbeatLeaseName(host);
    const annotation = encodeHostReport(await this.#options.report());
    const now = new V1MicroTime((this.#options.now ?? Date.now)());
    for (let attempt = 0; attempt < 3; attempt++) {
      this.#current ??= await leases.read(namespace, name);
      const base = this.#current;
      const lease: V1Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          ...(base?.metadata ?? {}),
          name,
          namespace,
          labels: { ...(base?.metadata?.labels ?? {}), [HEARTBEAT_LABEL]: "true" },
          annotations: {
            ...(base?.metadata?.annotations ?? {}),
            [HOST_REPORT_ANNOTATION]: annotation,
          },
        },
        spec: {
          holderIdentity: host,
          leaseDurationSeconds: this.#options.leaseDurationSeconds ?? 15,
          acquireTime: base?.spec?.acquireTime ?? now,
          renewTime: now,
        },
      };
      try {
        this.#current = base ? await leases.replace(lease) : await leases.create(lease);
        this.lastWriteMs = Date.now();
        return;
      } catch (error) {
        this.#current = undefined;
        // someone else wrote it (a previous run of this host): read it again and retry
        if (!isConflict(error) || attempt === 2) throw error;
      }
    }
  }
}
