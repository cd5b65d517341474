/**
 * The narrow port leader election uses to reach `coordination.k8s.io/v1` Leases, and its adapter
 * over client-node's generated `CoordinationV1Api`. Unit tests implement the port in memory.
 *
 * @module
 */
import type { CoordinationV1Api, V1Lease } from "@kubernetes/client-node";
import { toKubeApiError } from "./api_error.ts";
import { isNotFound } from "./ports.ts";

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

/** The three calls of client-node's CoordinationV1Api that the adapter needs. */
export type LeaseCalls = Pick<
  CoordinationV1Api,
  "readNamespacedLease" | "createNamespacedLease" | "replaceNamespacedLease"
>;

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

/**
 * Adapts client-node's CoordinationV1Api (object-parameter style) to `LeaseApi`, mapping every
 * error to a `KubeApiError` (client-node's `ApiException.code` becomes `KubeApiError.code`).
 * @param api `KubeClient.coordination`, or anything with the same three methods
 * @returns the port
 */
export function leaseApiFromCoordinationApi(api: LeaseCalls): LeaseApi {
  return {
    async read(namespace, name) {
      try {
        return await api.readNamespacedLease({ namespace, name });
      } catch (error) {
        const mapped = toKubeApiError(error, `read lease "${namespace}/${name}"`);
        if (isNotFound(mapped)) return undefined;
        throw mapped;
      }
    },
    async create(lease) {
      const { namespace, name } = leaseName(lease);
      try {
        return await api.createNamespacedLease({ namespace, body: lease });
      } catch (error) {
        throw toKubeApiError(error, `create lease "${namespace}/${name}"`);
      }
    },
    async replace(lease) {
      const { namespace, name } = leaseName(lease);
      try {
        return await api.replaceNamespacedLease({ namespace, name, body: lease });
      } catch (error) {
        throw toKubeApiError(error, `replace lease "${namespace}/${name}"`);
      }
    },
  };
}
