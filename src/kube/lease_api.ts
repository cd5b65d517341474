/**
 * The narrow port leader election uses to reach `coordination.k8s.io/v1` Leases, and its
 * implementation over the plain-JSON REST calls (`rest_api.ts`). Unit tests implement the port in
 * memory.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { isNotFound } from "./ports.ts";
import { objectPath, type RestApi } from "./rest_api.ts";

/** Read, create and replace one Lease. Errors are `KubeApiError`s (409 Conflict on a stale write). */
export interface LeaseApi {
  /**
   * Reads a Lease.
   * @param namespace its namespace
   * @param name its name
   * @returns the Lease, or undefined when it does not exist (404)
   * @throws {KubeApiError} on any other API or network error
   */
  read(namespace: string, name: string): Promise<V1Lease | undefined>;
  /**
   * Creates a Lease (`metadata.namespace` and `metadata.name` must be set).
   * @param lease the Lease to create
   * @returns the created Lease, with its resourceVersion
   * @throws {KubeApiError} 409 AlreadyExists when it exists
   */
  create(lease: V1Lease): Promise<V1Lease>;
  /**
   * Replaces a Lease (PUT), guarded by `metadata.resourceVersion`.
   * @param lease the whole Lease
   * @returns the stored Lease, with its new resourceVersion
   * @throws {KubeApiError} 409 Conflict when the resourceVersion is stale
   */
  replace(lease: V1Lease): Promise<V1Lease>;
}

function leaseName(lease: V1Lease): { namespace: string; name: string } {
  const namespace = lease.metadata?.namespace ?? "";
  const name = lease.metadata?.name ?? "";
  if (!namespace || !name) {
    throw new TypeError(
      `Cannot write lease: metadata.namespace and metadata.name must be set, got "${namespace}/${name}"`,
    );
  }
  return { namespace, name };
}

const GROUP = "coordination.k8s.io";

/**
 * The Lease port over the REST calls of a client (`client.rest`): every error is a `KubeApiError`
 * (409 Conflict on a stale replace, 409 AlreadyExists on a second create).
 * @param rest the REST calls (leader election's own client, so it keeps its own rate limit)
 * @returns the port
 */
export function createLeaseApi(rest: RestApi): LeaseApi {
  return {
    async read(namespace, name) {
      try {
        return await rest.get<V1Lease>(
          objectPath({ group: GROUP, resource: "leases", namespace, name }),
          `read lease "${namespace}/${name}"`,
        );
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async create(lease) {
      const { namespace, name } = leaseName(lease);
      return await rest.create<V1Lease>(
        objectPath({ group: GROUP, resource: "leases", namespace }),
        lease,
        `create lease "${namespace}/${name}"`,
      );
    },
    async replace(lease) {
      const { namespace, name } = leaseName(lease);
      return await rest.replace<V1Lease>(
        objectPath({ group: GROUP, resource: "leases", namespace, name }),
        lease,
        `replace lease "${namespace}/${name}"`,
      );
    },
  };
}
