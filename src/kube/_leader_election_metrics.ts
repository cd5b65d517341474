/**
 * client-go's leader-election metrics (upstream names, label `name` = the Lease name). Electors
 * sharing one Registry share the metric objects, since a Registry refuses a second metric of the
 * same name.
 *
 * @module
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { declareOnce } from "../metrics/registry.ts";

/** What a LeaderElector reports. */
export interface ElectionMetrics {
  /** 1 while leading, 0 otherwise. */
  leading(on: boolean): void;
  /** A renewal had to re-read the Lease (the optimistic update failed). */
  slowpath(): void;
}

interface MetricSet {
  status: Gauge;
  slowpath: Counter;
}

function metricSet(registry: Registry): MetricSet {
  return {
    status: declareOnce(registry, "leader_election_master_status", () =>
      new Gauge({
        name: "leader_election_master_status",
        help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates " +
          "backup, 1 indicates master. 'name' is the string used to identify the lease. " +
          "Please make sure to group by name.",
        labelNames: ["name"],
        registers: [registry],
      })),
    slowpath: declareOnce(registry, "leader_election_slowpath_total", () =>
      new Counter({
        name: "leader_election_slowpath_total",
        help: "Total number of slow path exercised in renewing leader leases. 'name' is the " +
          "string used to identify the lease. Please make sure to group by name.",
        labelNames: ["name"],
        registers: [registry],
      })),
  };
}

/**
 * Makes the series of one Lease exist (status 0, no slow path yet) before any elector runs: at the
 * agent's start, so `leader_election_master_status` says "not leading" from the first scrape, also
 * while no API server can be reached. A value already set stays.
 * @param registry the process's registry
 * @param name the Lease name (the `name` label)
 */
export function declareElectionMetrics(registry: Registry, name: string): void {
  const set = metricSet(registry);
  set.status.inc({ name }, 0);
  set.slowpath.inc({ name }, 0);
}

/**
 * The metrics of one elector; a no-op without a registry.
 * @param registry where the metrics live, if anywhere
 * @param name the Lease name (the `name` label)
 * @returns the reporter
 */
export function electionMetrics(registry: Registry | undefined, name: string): ElectionMetrics {
  if (!registry) return { leading() {}, slowpath() {} };
  const set = metricSet(registry);
  set.status.set({ name }, 0);
  set.slowpath.inc({ name }, 0);
  return {
    leading: (on) => set.status.set({ name }, on ? 1 : 0),
    slowpath: () => set.slowpath.inc({ name }),
  };
}
