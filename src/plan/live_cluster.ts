/**
 * Reads what `keelson plan --kubeconfig` plans against from a live cluster: Nodes, Services,
 * EndpointSlices and the hosts' heartbeat Leases. Lists only (no watch), in bounded pages
 * (`limit`/`continue`), through the read-only client (it has no write method), each request with
 * its own deadline (the client's) and the whole read under the caller's signal. Every item goes
 * through the snapshot file's validation (`addListItems`): the answer is as untrusted as a file.
 * Items of another kind than their list's were already left out by the client; their count is
 * returned for the command to say.
 *
 * @module
 */
import { addListItems, emptySnapshot, type Snapshot } from "../snapshot/load_snapshot.ts";
import { LIST_PAGE_SIZE } from "../kube/bounded_body.ts";
import { listEveryPage } from "../kube/list_pages.ts";
import type { ReadOnlyKubeClient } from "../kube/read_only_client.ts";
import { HEARTBEAT_NAMESPACE } from "../status/host_report.ts";

/** One collection the live plan reads. */
export interface LiveCollection {
  /** The collection's path. */
  path: string;
  /** The kind of its list, e.g. `NodeList` (its items carry no kind). */
  listKind: string;
}

/** What the live plan reads, in this order. */
export const LIVE_COLLECTIONS: readonly LiveCollection[] = [
  { path: "/api/v1/nodes", listKind: "NodeList" },
  { path: "/api/v1/services", listKind: "ServiceList" },
  { path: "/apis/discovery.k8s.io/v1/endpointslices", listKind: "EndpointSliceList" },
  {
    path: `/apis/coordination.k8s.io/v1/namespaces/${HEARTBEAT_NAMESPACE}/leases`,
    listKind: "LeaseList",
  },
];

/** Options of `readLiveCluster` and `listAllPages`. */
export interface LiveReadOptions {
  /** Items per page (`limit`). @default LIST_PAGE_SIZE */
  pageSize?: number;
  /** The most items one collection may hold; more is refused, not truncated. @default 100 000 */
  maxItems?: number;
  /** Aborts the whole read (the total deadline). */
  signal?: AbortSignal;
}

/** What was read, and what it cost. */
export interface LiveCluster {
  /** The objects, validated as a snapshot file's. */
  snapshot: Snapshot;
  /** How many requests were sent (all GETs). */
  requests: number;
  /** Per collection path, the items left out (kind or apiVersion not the collection's). */
  ignored: Record<string, number>;
}

/**
 * Reads every collection of `LIVE_COLLECTIONS` into one snapshot.
 * @param client the read-only client
 * @param options page size, item bound, signal
 * @returns the snapshot and the request count
 * @throws {KubeApiError} when a request fails; {Error} naming the item on a malformed object or a
 *   collection above `maxItems`; the signal's reason on abort
 */
export async function readLiveCluster(
  client: ReadOnlyKubeClient,
  options: LiveReadOptions = {},
): Promise<LiveCluster> {
  const snapshot = emptySnapshot();
  let requests = 0;
  const ignored: Record<string, number> = {};
  for (const collection of LIVE_COLLECTIONS) {
    const read = await listAllPages(client, collection.path, options);
    requests += read.requests;
    if (read.ignored > 0) ignored[collection.path] = read.ignored;
    addListItems(snapshot, read.items, collection.listKind, `list ${collection.path}`);
  }
  return { snapshot, requests, ignored };
}

/**
 * Lists one collection page by page through the one pager (`listEveryPage`: an expired continue
 * token restarts the list once).
 * @param client the read-only client
 * @param path the collection
 * @param options page size, item bound, signal
 * @returns every item, the number of requests sent and of items left out
 * @throws {KubeApiError} when a request fails; {Error} above `maxItems`
 */
export async function listAllPages(
  client: ReadOnlyKubeClient,
  path: string,
  options: LiveReadOptions = {},
): Promise<{ items: unknown[]; requests: number; ignored: number }> {
  const { items, requests, ignored } = await listEveryPage(client, path, {
    pageSize: options.pageSize ?? LIST_PAGE_SIZE,
    maxItems: options.maxItems ?? 100_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { items, requests, ignored };
}
