/**
 * The bare-metal provider's `PowerControl`: the power of a Node's machine as the leader's
 * `PowerMonitor` last observed it, and ForceOff through the machine's BMC.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { type PowerControl, ProviderError } from "../../../src/cloud/provider.ts";
import type { Config, Machine } from "../../../src/config/types.ts";
import { errorMessage } from "../../../src/log/error_message.ts";
import { declarePowerMetrics, PowerMonitor } from "./power_monitor.ts";

/** A deadline for ForceOff beyond the BMC's own request timeouts (discovery may take two). */
const FORCE_OFF_EXTRA_MS = 1_000;

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
 * @returns the monitor, the shutdown predicate and the contract's PowerControl
 */
export function createBaremetalPower(config: () => Config, registry: Registry): BaremetalPower {
  const monitor = new PowerMonitor({ config, metrics: declarePowerMetrics(registry) });
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
        const signal = AbortSignal.timeout(2 * machine.bmc.timeout.ms + FORCE_OFF_EXTRA_MS);
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
