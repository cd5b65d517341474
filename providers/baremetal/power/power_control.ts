/**
 * The bare-metal provider's `PowerControl`: the power of a Node's machine as the leader's
 * `PowerMonitor` last observed it, and ForceOff through the machine's BMC. A BMC system that is
 * not provably the machine's (another identity, no single candidate, a path outside it) is a
 * Warning Event on the machine's Node, once per cause.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { type PowerControl, ProviderError } from "../../../src/cloud/provider.ts";
import type { Config, Machine } from "../../../src/config/types.ts";
import { nodeRef } from "../../../src/kube/event_targets.ts";
import type { EventRecorder, EventTarget } from "../../../src/kube/ports.ts";
import { errorMessage } from "../../../src/log/error_message.ts";
import { declarePowerMetrics, PowerMonitor } from "./power_monitor.ts";
import type { RedfishFailure } from "./redfish_client.ts";

/** The Warning on a Node whose machine's BMC system reports another machine's identity. */
export const REASON_BMC_IDENTITY_MISMATCH = "BMCIdentityMismatch";
/** The Warning on a Node whose machine's BMC system cannot be told or reached safely. */
export const REASON_BMC_SYSTEM_REFUSED = "BMCSystemRefused";

/** Where the power part records its Warnings (once connected to the cluster). */
export interface PowerEventTargets {
  /** The recorder; undefined while not connected. */
  events: () => EventRecorder | undefined;
  /** The Node of a machine, when one exists. */
  nodeOf: (machine: Machine) => V1Node | undefined;
}

/** A deadline for ForceOff beyond the BMC's own request timeouts. */
const FORCE_OFF_EXTRA_MS = 1_000;

/**
 * Requests a ForceOff may take: the system read again and the POST; with discovery, the polling
 * loop's client has found the system already, else one page and one member are read first.
 */
function forceOffRequests(machine: Machine): number {
  return machine.bmc?.system === undefined ? 4 : 2;
}

/** The provider's power part. */
export interface BaremetalPower {
  /** Polls the BMCs (started by `initialize`, synced by `reconfigure`). */
  monitor: PowerMonitor;
  /** Whether the machine's BMC confirmed it off (for `instanceShutdown`). */
  confirmedOff: (machine: Machine) => boolean;
  /**
   * The contract's `PowerControl`, over the provider's Node-to-machine lookup.
   * @param machineOf the machine behind a Node (throws as `findMachine` does)
   */
  control(machineOf: (node: V1Node) => Machine | undefined): PowerControl;
}

/**
 * Builds the power part; its metric families are declared now (every host).
 * @param config the configuration in force
 * @param registry the process's registry
 * @param targets where Warnings about refused BMC systems go; absent: logged only
 * @returns the monitor, the shutdown predicate and the contract's PowerControl
 */
export function createBaremetalPower(
  config: () => Config,
  registry: Registry,
  targets?: PowerEventTargets,
): BaremetalPower {
  const monitor = new PowerMonitor({
    config,
    metrics: declarePowerMetrics(registry),
    onRefused: (machine, reason, message) => recordRefusal(targets, machine, reason, message),
  });
  return {
    monitor,
    confirmedOff: (machine) => monitor.confirmedOff(machine),
    control: (machineOf) => ({
      powerState(node: V1Node) {
        try {
          const machine = machineOf(node);
          return Promise.resolve(machine ? monitor.observation(machine.name) : null);
        } catch (error) {
          return Promise.reject(error);
        }
      },
      onChange(listener) {
        return monitor.onChange((machine) =>
          listener({
            concerns(node: V1Node) {
              try {
                return machineOf(node)?.name === machine;
              } catch {
                // a Node no machine can be told for is no machine's
                return false;
              }
            },
          })
        );
      },
      async forceOff(node: V1Node) {
        const machine = machineOf(node);
        const name = node.metadata?.name ?? "";
        if (machine?.bmc === undefined) {
          throw new ProviderError(
            `Cannot power off node "${name}": ${
              machine ? `machine "${machine.name}" has no [machines.bmc]` : "no machine matches it"
            }`,
            { retriable: false, reason: "NoPowerController" },
          );
        }
        const signal = AbortSignal.timeout(
          forceOffRequests(machine) * machine.bmc.timeout.ms + FORCE_OFF_EXTRA_MS,
        );
        try {
          await monitor.forceOff(machine, signal);
        } catch (error) {
          throw new ProviderError(
            `Cannot power off machine "${machine.name}" (node "${name}") through its BMC: ${
              errorMessage(error)
            }`,
            { reason: "PowerOffFailed", cause: error },
          );
        }
      },
    }),
  };
}

/** The Warning Event for a machine whose BMC system was refused, on its Node (by name if none). */
function recordRefusal(
  targets: PowerEventTargets | undefined,
  machine: Machine,
  reason: RedfishFailure,
  message: string,
): void {
  const recorder = targets?.events();
  if (recorder === undefined) return;
  const node = targets!.nodeOf(machine);
  const target: EventTarget = node
    ? nodeRef(node)
    : { kind: "Node", apiVersion: "v1", metadata: { name: machine.name } };
  recorder.event(
    target,
    "Warning",
    reason === "identity" ? REASON_BMC_IDENTITY_MISMATCH : REASON_BMC_SYSTEM_REFUSED,
    `Machine ${machine.name}'s power is unknown (nothing is tainted or fenced for it): ${message}`,
  );
}
