/**
 * Which items of a list answer belong to the list: an item whose `kind` or `apiVersion` is not the
 * collection's (a Service inside a NodeList, a Node inside a LeaseList) is left out and counted,
 * never taken for what the collection holds. Items of a list usually carry neither field: they
 * then take the list's own (`NodeList` → `Node`), so a whole list of the wrong kind is left out
 * too. What a collection holds comes from its path: the API version exactly, the kind from the
 * resources Keelson lists (else from the list's own kind).
 *
 * @module
 */

/** What the items of one collection are. */
export interface CollectionKind {
  /** e.g. `Node`; undefined for a resource Keelson does not know (then the list's own kind). */
  kind: string | undefined;
  /** e.g. `v1`, `discovery.k8s.io/v1`. */
  apiVersion: string;
}

/** The longest name of any Kubernetes object (a DNS subdomain). */
const MAX_NAME_LENGTH = 253;
/** The longest namespace name (a DNS label). */
const MAX_NAMESPACE_LENGTH = 63;

/** The kinds of the collections Keelson reads, by plural resource name. */
const KINDS: Readonly<Record<string, string>> = {
  nodes: "Node",
  services: "Service",
  persistentvolumes: "PersistentVolume",
  endpointslices: "EndpointSlice",
  leases: "Lease",
  pods: "Pod",
  events: "Event",
  namespaces: "Namespace",
};

/**
 * What the items of a collection path are.
 * @param path e.g. `/api/v1/nodes`, `/apis/coordination.k8s.io/v1/namespaces/x/leases`
 * @returns its kind (when known) and API version
 */
export function collectionKindOf(path: string): CollectionKind {
  const parts = path.split("?")[0]!.split("/").filter((p) => p !== "");
  const apiVersion = parts[0] === "apis" ? `${parts[1]}/${parts[2]}` : parts[1] ?? "v1";
  return { kind: KINDS[parts[parts.length - 1] ?? ""], apiVersion };
}

/**
 * Whether one object is of the collection's kind and version; a field it lacks is taken from
 * `defaults` (its list's), and one absent from both is not held against it.
 * @param item the object (untrusted)
 * @param expected the collection's kind and version
 * @param defaults the list's item kind and version
 * @returns false when its kind or apiVersion says it is something else, or its name or
 *   namespace is longer than Kubernetes allows
 */
export function belongsToCollection(
  item: unknown,
  expected: CollectionKind,
  defaults: { kind?: string | undefined; apiVersion?: string | undefined } = {},
): boolean {
  const fields = typeof item === "object" && item !== null
    ? item as { kind?: unknown; apiVersion?: unknown }
    : {};
  const kind = typeof fields.kind === "string" ? fields.kind : defaults.kind;
  const apiVersion = typeof fields.apiVersion === "string"
    ? fields.apiVersion
    : defaults.apiVersion;
  if (expected.kind !== undefined && kind !== undefined && kind !== expected.kind) return false;
  if (apiVersion !== undefined && apiVersion !== expected.apiVersion) return false;
  const metadata = (fields as { metadata?: { name?: unknown; namespace?: unknown } }).metadata;
  const name = typeof metadata === "object" && metadata !== null ? metadata.name : undefined;
  const namespace = typeof metadata === "object" && metadata !== null
    ? metadata.namespace
    : undefined;
  return !(typeof name === "string" && name.length > MAX_NAME_LENGTH) &&
    !(typeof namespace === "string" && namespace.length > MAX_NAMESPACE_LENGTH);
}

/**
 * The items of a list answer that belong to its collection, and how many did not.
 * @param list the parsed answer: its `kind`, `apiVersion` and `items`
 * @param expected the collection's kind and version (`collectionKindOf`)
 * @returns the items kept, in order, and the count left out
 */
export function itemsOfCollection(
  list: { kind?: unknown; apiVersion?: unknown; items: unknown[] },
  expected: CollectionKind,
): { items: unknown[]; ignored: number } {
  const listKind = typeof list.kind === "string" && list.kind.endsWith("List") &&
      list.kind !== "List"
    ? list.kind.slice(0, -"List".length)
    : undefined;
  const defaults = {
    kind: listKind,
    apiVersion: typeof list.apiVersion === "string" ? list.apiVersion : undefined,
  };
  const check = { kind: expected.kind ?? listKind, apiVersion: expected.apiVersion };
  const items = list.items.filter((item) => belongsToCollection(item, check, defaults));
  return { items, ignored: list.items.length - items.length };
}

/**
 * The note a command prints for items left out of a list.
 * @param path the collection
 * @param count how many
 * @returns e.g. `ignored 1 object in the answer to list /api/v1/nodes: its kind or apiVersion ...`
 */
export function ignoredItemsNote(path: string, count: number): string {
  const objects = count === 1 ? "1 object" : `${count} objects`;
  return `ignored ${objects} in the answer to list ${path}: not of the collection's kind or ` +
    "apiVersion, or named beyond Kubernetes' limits";
}
