/**
 * An in-memory Lease store with the apiserver's optimistic concurrency (a resourceVersion per
 * write, 409 on a stale replace or a second create), and a ledger over it for controller tests.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { ActionLedger } from "../../../src/controllers/action_ledger/action_ledger.ts";
import type { LeaseApi } from "../../../src/kube/lease_api.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";

/** Leases in memory; every copy goes through JSON, as over the wire. */
export class MemoryLeases implements LeaseApi {
  #store = new Map<string, V1Lease>();
  #rv = 0;
  /** When set, every call fails like an unreachable server. */
  down = false;
  /** Successful creates and replaces. */
  writes = 0;

  #check(): void {
    if (this.down) throw new KubeApiError("Cannot reach the server", { code: 0 });
  }

  /** @returns the stored Lease (a copy), or undefined */
  get(namespace: string, name: string): V1Lease | undefined {
    const lease = this.#store.get(`${namespace}/${name}`);
    return lease ? structuredClone(lease) : undefined;
  }

  /** Stores a Lease as is (a test's setup, or another writer), with a new resourceVersion. */
  put(lease: V1Lease): V1Lease {
    const copy: V1Lease = JSON.parse(JSON.stringify(lease));
    copy.metadata = { ...copy.metadata, resourceVersion: String(++this.#rv) };
    this.#store.set(`${copy.metadata.namespace}/${copy.metadata.name}`, copy);
    return structuredClone(copy);
  }

  read(namespace: string, name: string): Promise<V1Lease | undefined> {
    this.#check();
    return Promise.resolve(this.get(namespace, name));
  }

  create(lease: V1Lease): Promise<V1Lease> {
    this.#check();
    if (this.#store.has(`${lease.metadata!.namespace}/${lease.metadata!.name}`)) {
      return Promise.reject(new KubeApiError("already exists", { code: 409 }));
    }
    this.writes++;
    return Promise.resolve(this.put(lease));
  }

  replace(lease: V1Lease): Promise<V1Lease> {
    this.#check();
    const current = this.#store.get(`${lease.metadata!.namespace}/${lease.metadata!.name}`);
    if (!current) return Promise.reject(new KubeApiError("not found", { code: 404 }));
    if (current.metadata!.resourceVersion !== lease.metadata?.resourceVersion) {
      return Promise.reject(new KubeApiError("the object has been modified", { code: 409 }));
    }
    this.writes++;
    return Promise.resolve(this.put(lease));
  }
}

/** The leader Lease the ledgers of these tests use. */
export const LEDGER_LEASE = { namespace: "kube-system", name: "keelson" } as const;

/**
 * A Lease store where `holder` holds the leader Lease in its first term (no earlier holder),
 * and that term's ledger.
 * @param now the test's clock
 * @param holder the identity
 * @returns the store and the ledger
 */
export function firstTermLedger(
  now: () => number,
  holder = "host-a_1",
): { leases: MemoryLeases; ledger: ActionLedger } {
  const leases = new MemoryLeases();
  holdLease(leases, holder, 0);
  return { leases, ledger: termLedger(leases, holder, now) };
}

/**
 * Makes `holder` the leader Lease's holder (keeping its annotations), as a takeover does.
 * @param leases the store
 * @param holder the new holder
 * @param transitions the Lease's leaseTransitions afterwards
 */
export function holdLease(leases: MemoryLeases, holder: string, transitions: number): void {
  const current = leases.get(LEDGER_LEASE.namespace, LEDGER_LEASE.name);
  leases.put({
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { ...LEDGER_LEASE, ...current?.metadata },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, leaseTransitions: transitions },
  });
}

/**
 * A term's ledger over the store.
 * @param leases the store
 * @param holder the term's identity
 * @param now the clock
 * @returns the ledger
 */
export function termLedger(leases: MemoryLeases, holder: string, now: () => number): ActionLedger {
  return new ActionLedger({ leases, ...LEDGER_LEASE, holder, now });
}
