/**
 * While leading: publishes the leader's judgement of every heartbeat (`leader_judgement.ts`) on
 * its own Lease next to the leader Lease, every `JUDGEMENT_PERIOD_MS`, with a sequence number
 * that grows at every write. `keelson status` uses it once it has seen it change, and so answers
 * within about one period instead of watching the Leases for a heartbeat period itself.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { delay } from "../kube/delay.ts";
import type { LeaseApi } from "../kube/lease_api.ts";
import { MicroTime } from "../kube/micro_time.ts";
import { isConflict } from "../kube/ports.ts";
import { errorMessage } from "../log/error_message.ts";
import { logger } from "../log/logging.ts";
import type { HeartbeatSource } from "../status/heartbeats.ts";
import {
  JUDGEMENT_ANNOTATION,
  JUDGEMENT_PERIOD_MS,
  judgementOf,
  MAX_JUDGEMENT_BYTES,
} from "../status/leader_judgement.ts";

/** After a failed write, the wait before the next (a refused write every period is noise). */
const RETRY_AFTER_ERROR_MS = 10_000;

/** Options of `publishJudgement`. */
export interface JudgementPublisherOptions {
  leases: LeaseApi;
  /** The publication Lease (`judgementLeaseName`) and its namespace (the leader Lease's). */
  namespace: string;
  name: string;
  /** This leader's holderIdentity. */
  identity: string;
  /** Every heartbeat, judged by the leader's shared observer. */
  heartbeats: HeartbeatSource;
  /**
   * The serving hosts of the inventory in force (`servingHostNames`: control-plane machines and
   * workers a pool selects, not retired): each should report. @default none
   */
  servingHosts?: () => readonly string[];
  /** The control-plane VIPs of the inventory in force. @default none */
  controlPlaneVips?: () => readonly string[];
  /** Whether the heartbeat cache has synced (before, there is nothing to judge). */
  synced: () => boolean;
  /** @default JUDGEMENT_PERIOD_MS */
  periodMs?: number;
}

/**
 * Publishes until `signal` aborts (leadership lost, or the process stopping). Never rejects.
 * @param options where, who, and what to judge
 * @param signal stops it
 */
export async function publishJudgement(
  options: JudgementPublisherOptions,
  signal: AbortSignal,
): Promise<void> {
  const log = logger("agent", "judgement");
  const period = options.periodMs ?? JUDGEMENT_PERIOD_MS;
  let current: V1Lease | undefined;
  let seq = 0;
  let lastError = "";
  while (!signal.aborted) {
    let wait = period;
    if (options.synced()) {
      try {
        current = await write(current, seq++);
        if (lastError) log.info("Publishing the heartbeat judgement again");
        lastError = "";
      } catch (error) {
        current = undefined;
        const message = errorMessage(error);
        if (message !== lastError) {
          log.warn(
            "Cannot publish the heartbeat judgement on Lease {name} ({error}); keelson status " +
              "then watches the Leases itself (a few seconds)",
            { name: `${options.namespace}/${options.name}`, error: message },
          );
        }
        lastError = message;
        wait = RETRY_AFTER_ERROR_MS;
      }
    }
    await delay(wait, signal);
  }

  async function write(base: V1Lease | undefined, n: number): Promise<V1Lease> {
    const text = JSON.stringify(
      judgementOf(
        options.heartbeats.list(),
        options.identity,
        n,
        options.servingHosts?.() ?? [],
        options.controlPlaneVips?.() ?? [],
      ),
    );
    if (text.length > MAX_JUDGEMENT_BYTES) throw new Error("the judgement exceeds its size bound");
    for (let attempt = 0; attempt < 2; attempt++) {
      base ??= await options.leases.read(options.namespace, options.name);
      const lease: V1Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          ...(base?.metadata ?? {}),
          name: options.name,
          namespace: options.namespace,
          annotations: { ...(base?.metadata?.annotations ?? {}), [JUDGEMENT_ANNOTATION]: text },
        },
        spec: {
          holderIdentity: options.identity,
          leaseDurationSeconds: Math.max(1, Math.ceil((period * 4) / 1000)),
          renewTime: new MicroTime(Date.now()),
        },
      };
      try {
        return base === undefined
          ? await options.leases.create(lease)
          : await options.leases.replace(lease);
      } catch (error) {
        if (!isConflict(error)) throw error;
        base = undefined; // another write came first (a former leader's last one): read again
      }
    }
    throw new Error("conflicting writes");
  }
}
