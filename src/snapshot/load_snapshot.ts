/**
 * Reads a saved cluster state (`kubectl get nodes,services,endpointslices,pv -A -o yaml|json`) for
 * offline commands.
 *
 * @module
 */
import type {
  V1EndpointSlice,
  V1Lease,
  V1Node,
  V1PersistentVolume,
  V1Service,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { readInputFile } from "../files/read_input_file.ts";
import {
  describeItemIssue,
  SnapshotEndpointSliceSchema,
  SnapshotLeaseSchema,
  SnapshotNodeSchema,
  SnapshotPersistentVolumeSchema,
  SnapshotServiceSchema,
} from "./snapshot_schema.ts";
import { errorMessage } from "../log/error_message.ts";

/** The objects of a snapshot, by kind. */
export interface Snapshot {
  nodes: V1Node[];
  services: V1Service[];
  persistentVolumes: V1PersistentVolume[];
  endpointSlices: V1EndpointSlice[];
  /** Leases (hosts' heartbeats among them). */
  leases: V1Lease[];
  /** How many objects of each other kind (Pods, ConfigMaps, ...) it held, unread. */
  otherKinds: Map<string, number>;
}

/**
 * Loads a snapshot file: a `List` (or `NodeList`, ...), several YAML documents, or one object, in
 * YAML or JSON. Objects of other kinds are ignored.
 * @param path the file to read
 * @returns the Nodes, Services, EndpointSlices and PersistentVolumes it holds, in file order
 * @throws {Error} naming the file (and the document or item index) when it cannot be read or parsed
 */
export async function loadSnapshot(path: string): Promise<Snapshot> {
  let text: string;
  try {
    text = await readInputFile(path);
  } catch (error) {
    throw new Error(`Cannot read cluster state ${path}: ${errorMessage(error)}`);
  }
  return parseSnapshot(text, path);
}

/**
 * Parses snapshot text (see `loadSnapshot`).
 * @param text YAML or JSON
 * @param source the file name used in error messages
 * @returns the objects by kind
 * @throws {Error} naming `source` and the document/item index on a malformed input
 */
export function parseSnapshot(text: string, source: string): Snapshot {
  const snapshot = emptySnapshot();
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents)) {
    throw new Error(`Cannot parse cluster state ${source}: it is empty`);
  }
  documents.forEach((document, docIndex) => {
    const where = documents.length > 1 ? ` document ${docIndex + 1}` : "";
    if (document.errors.length > 0) {
      throw new Error(
        `Cannot parse cluster state ${source}${where}: ${document.errors[0]?.message ?? ""}`,
      );
    }
    const value: unknown = document.toJS();
    if (value === null || value === undefined) return;
    if (!isObject(value)) {
      throw new Error(
        `Cannot read cluster state ${source}${where}: expected a Kubernetes object or List, found ${typeof value}`,
      );
    }
    if (Array.isArray(value.items)) {
      value.items.forEach((item: unknown, itemIndex: number) => {
        add(snapshot, item, `${source}${where} item ${itemIndex}`, value.kind);
      });
    } else {
      add(snapshot, value, `${source}${where}`, undefined);
    }
  });
  return snapshot;
}

/** @returns a snapshot holding nothing */
export function emptySnapshot(): Snapshot {
  return {
    nodes: [],
    services: [],
    persistentVolumes: [],
    endpointSlices: [],
    leases: [],
    otherKinds: new Map(),
  };
}

/**
 * Adds the items of one list (a file's `List`, or a page the API server answered) to a snapshot,
 * each checked as a snapshot file's items are: the one validation path for cluster objects.
 * @param snapshot where the items go
 * @param items the list's items, untrusted
 * @param listKind e.g. `NodeList`: the kind of items that carry none (the API server omits it)
 * @param source names the list in error messages, e.g. `list /api/v1/nodes`
 * @throws {Error} naming `source`, the item index, the object and the field on a malformed item
 */
export function addListItems(
  snapshot: Snapshot,
  items: readonly unknown[],
  listKind: string,
  source: string,
): void {
  items.forEach((item, index) => add(snapshot, item, `${source} item ${index}`, listKind));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const LIST_KINDS: Record<string, string> = {
  NodeList: "Node",
  ServiceList: "Service",
  PersistentVolumeList: "PersistentVolume",
  EndpointSliceList: "EndpointSlice",
  LeaseList: "Lease",
};

function add(snapshot: Snapshot, item: unknown, where: string, listKind: unknown): void {
  if (!isObject(item)) {
    throw new Error(`Cannot read cluster state ${where}: expected an object, found ${typeof item}`);
  }
  const kind = typeof item.kind === "string"
    ? item.kind
    : typeof listKind === "string"
    ? LIST_KINDS[listKind]
    : undefined;
  const metadata = item.metadata;
  if (!isObject(metadata) || typeof metadata.name !== "string" || metadata.name === "") {
    throw new Error(`Cannot read cluster state ${where}: metadata.name is missing`);
  }
  // every field Keelson reads is type-checked here, so nothing later meets a number where it
  // expects text (the error names the item and the field, never a stack trace)
  const check = (schema: { safeParse(v: unknown): { success: boolean; error?: unknown } }) => {
    const result = schema.safeParse(item);
    if (!result.success) {
      const issues = (result.error as { issues: Parameters<typeof describeItemIssue>[0] }).issues;
      throw new Error(
        `Cannot read cluster state ${where} (${kind} "${metadata.name}"): ${
          describeItemIssue(issues, item)
        }`,
      );
    }
  };
  switch (kind) {
    case "Node":
      check(SnapshotNodeSchema);
      snapshot.nodes.push(item as V1Node);
      break;
    case "Service":
      check(SnapshotServiceSchema);
      snapshot.services.push(item as V1Service);
      break;
    case "PersistentVolume":
      check(SnapshotPersistentVolumeSchema);
      snapshot.persistentVolumes.push(item as V1PersistentVolume);
      break;
    case "EndpointSlice":
      check(SnapshotEndpointSliceSchema);
      snapshot.endpointSlices.push(item as unknown as V1EndpointSlice);
      break;
    case "Lease":
      check(SnapshotLeaseSchema);
      snapshot.leases.push(item as V1Lease);
      break;
    case undefined:
      throw new Error(`Cannot read cluster state ${where}: kind is missing`);
    default:
      // Other kinds (Pods, Endpoints, ...) may be in a broad `kubectl get` output; skip them,
      // counted so a snapshot holding nothing Keelson reads can say what it holds
      snapshot.otherKinds.set(kind, (snapshot.otherKinds.get(kind) ?? 0) + 1);
      break;
  }
}
