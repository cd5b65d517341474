/**
 * The per-host heartbeat: a Lease `kube-system/keelson-host-<host>` that only this host writes,
 * renewed every few seconds and at once when its data plane changes, carrying the host's report
 * (`src/status/host_report.ts`) in one annotation. As kubelets' node Leases, it lets anyone with
 * read access see which hosts are alive and what each serves; the leader derives from them which
 * host serves each VIP.
 *
 * Like a node Lease, the heartbeat names the host's Node as its owner when that Node exists, so
 * the garbage collector deletes it with the Node (a removed machine's heartbeat does not linger).
 * A host without a Node (a control-plane host without kubelet) writes none.
 *
 * @module
 */
import { MicroTime as V1MicroTime } from "../kube/micro_time.ts";
import type { V1Lease, V1OwnerReference } from "@kubernetes/client-node";
import { logger } from "../log/logging.ts";
import {
  HEARTBEAT_LABEL,
  heartbeatLeaseName,
  HOST_REPORT_ANNOTATION,
  type HostReport,
} from "../status/host_report.ts";
import { encodeHostReport } from "../status/encode_host_report.ts";
import { isConflict, isNotFound, KubeApiError } from "../kube/ports.ts";
import type { LeaseApi } from "../kube/lease_api.ts";
import { delay } from "../kube/delay.ts";
import { Wakeable } from "../kube/wakeable_delay.ts";
import { errorMessage } from "../log/error_message.ts";

/**
 * This host's Node as known now: its uid; `absent` when no Node of that name exists; `unknown`
 * while the Node cache has not synced (the Lease's owner references are then left as they are).
 */
export type HostNode = { uid: string } | "absent" | "unknown";

/**
 * The owner references of the heartbeat Lease of `host`: those of `current` except any to a Node,
 * plus one to the host's Node when it exists (as kubelet's node Leases: apiVersion v1, kind Node,
 * name and uid, no blockOwnerDeletion — that would need `update` on nodes/finalizers). A Node
 * recreated with a new uid replaces the old reference; a Node gone drops it.
 * @param current the Lease's references now (undefined: none)
 * @param host this host's machine name (= its Node's name)
 * @param node the Node as known now
 * @returns the references to write, or undefined when there are none
 */
export function heartbeatOwnerReferences(
  current: readonly V1OwnerReference[] | undefined,
  host: string,
  node: HostNode,
): V1OwnerReference[] | undefined {
  if (node === "unknown") return current && current.length > 0 ? [...current] : undefined;
  const others = (current ?? []).filter((r) => !(r.apiVersion === "v1" && r.kind === "Node"));
  const references = node === "absent"
    ? others
    : [...others, { apiVersion: "v1", kind: "Node", name: host, uid: node.uid }];
  return references.length > 0 ? references : undefined;
}

/**
 * After a write that changed the owner references was refused (403: an older deploy/rbac.yaml
 * without `delete` on Leases, where OwnerReferencesPermissionEnforcement is on), how long the
 * heartbeat leaves them as they are before it tries again: the heartbeat itself must not stop.
 */
export const OWNER_RETRY_MS = 10 * 60_000;

/**
 * How often a host renews its heartbeat (besides at once on a change of its data plane). A host
 * that stops renewing is told dead only by its silence, so a reader that sees another host take
 * one of its VIPs knows within one period whether it is still alive and holding it (a split
 * brain) or gone: 2 s keeps the leader's split-brain Warning within its 3 s grace of the split.
 */
export const HEARTBEAT_RENEW_MS = 2000;

/** Options of `HostHeartbeat`. */
export interface HostHeartbeatOptions {
  leases: LeaseApi;
  /** This host's machine name. */
  host: string;
  /** @default "kube-system" */
  namespace?: string;
  /** The report to publish now. */
  report: () => Promise<HostReport>;
  /** Renew period. @default HEARTBEAT_RENEW_MS */
  renewMs?: number;
  /** `leaseDurationSeconds`: a host silent longer than this is reported missing. @default 15 */
  leaseDurationSeconds?: number;
  /** Changes within this window share one write. @default 50 */
  debounceMs?: number;
  /** Current time. @default Date.now */
  now?: () => number;
  /** This host's Node, to own the Lease (see `HostNode`). @default () => "unknown" */
  node?: () => HostNode;
}

/** Writes this host's heartbeat Lease until stopped. */
export class HostHeartbeat {
  #options: HostHeartbeatOptions;
  #log = logger("kube", "heartbeat");
  #current: V1Lease | undefined;
  #wakeable = new Wakeable();
  #lastError = "";
  /** The last report encoded, as JSON, and its annotation. */
  #encoded: { json: string; annotation: string } | undefined;
  /** Until when (ms) owner references are left as they are, after a refused change. */
  #ownerRefusedUntil = 0;
  /** Time of the last successful write (ms), for health and tests. */
  lastWriteMs = 0;

  /** @param options Lease port, host, report source and timings */
  constructor(options: HostHeartbeatOptions) {
    this.#options = options;
  }

  /**
   * The annotation of a report: encoded again only when the report changed. Most renewals carry
   * the report of the one before, and encoding (fitting it to its bounds, validating it) costs
   * far more than comparing its JSON.
   */
  #encode(report: HostReport): string {
    const json = JSON.stringify(report);
    if (this.#encoded?.json !== json) {
      this.#encoded = { json, annotation: encodeHostReport(report) };
    }
    return this.#encoded.annotation;
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
    const renewMs = this.#options.renewMs ?? HEARTBEAT_RENEW_MS;
    while (!signal.aborted) {
      try {
        await this.writeOnce();
        if (this.#lastError) this.#log.info("Heartbeat written again");
        this.#lastError = "";
      } catch (error) {
        const message = errorMessage(error);
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
    const annotation = this.#encode(await this.#options.report());
    const nowMs = (this.#options.now ?? Date.now)();
    const now = new V1MicroTime(nowMs);
    for (let attempt = 0; attempt < 3; attempt++) {
      this.#current ??= await leases.read(namespace, name);
      const base = this.#current;
      const node = nowMs < this.#ownerRefusedUntil
        ? "unknown"
        : (this.#options.node ?? (() => "unknown" as const))();
      const ownerReferences = heartbeatOwnerReferences(
        base?.metadata?.ownerReferences,
        host,
        node,
      );
      const ownersChanged = JSON.stringify(ownerReferences ?? []) !==
        JSON.stringify(base?.metadata?.ownerReferences ?? []);
      const metadata = { ...(base?.metadata ?? {}) };
      delete metadata.ownerReferences;
      const lease: V1Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          ...metadata,
          ...(ownerReferences ? { ownerReferences } : {}),
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
        if (
          base && ownersChanged && error instanceof KubeApiError && error.code === 403 &&
          attempt < 2
        ) {
          // the owner change was refused, maybe not the heartbeat: write it without the change
          // (only an update: the admission plugin lets whoever creates an object name its owner)
          this.#ownerRefusedUntil = nowMs + OWNER_RETRY_MS;
          this.#log.warn(
            "Cannot name Node {host} as owner of heartbeat Lease {name} (apply deploy/rbac.yaml " +
              "again: it grants delete on Leases for that): {error}",
            { host, name, error: error.message },
          );
          continue;
        }
        // someone else wrote it (a previous run of this host), or deleted it (by hand, or the
        // garbage collector after its owner Node went): read it again and retry
        if (!(isConflict(error) || isNotFound(error)) || attempt === 2) throw error;
      }
    }
  }
}
