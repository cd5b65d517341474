/**
 * An in-memory cluster for controller unit tests: informers over Nodes, Services and
 * PersistentVolumes, a `ClusterWriter` with resourceVersion conflict semantics that records every
 * write, and a recording `EventRecorder`.
 *
 * @module
 */
import type { V1Node, V1PersistentVolume, V1Service } from "@kubernetes/client-node";
import {
  type ClusterWriter,
  type EventRecorder,
  type EventTarget,
  type Informer,
  type InformerEvent,
  KubeApiError,
  objectKey,
  type PatchType,
  type RecordedEvent,
} from "../../../src/kube/ports.ts";
import { applyPatch } from "./patch.ts";

/** One write made through the fake writer. */
export interface RecordedWrite {
  verb: "replace" | "patch" | "patchStatus" | "delete" | "create";
  kind: "Node" | "Service" | "PersistentVolume";
  key: string;
  patchType?: PatchType;
  body?: unknown;
}

type Meta = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };

/** An in-memory informer: a keyed store that notifies subscribers synchronously. */
export class FakeInformer<T extends Meta> implements Informer<T> {
  #items = new Map<string, T>();
  #handlers = new Set<(event: InformerEvent<T>) => void>();
  #synced = true;

  /** Sets whether `hasSynced` answers true (default true). */
  setSynced(synced: boolean): void {
    this.#synced = synced;
  }
  /** @returns the cached object (a deep copy), or undefined */
  get(key: string): T | undefined {
    const item = this.#items.get(key);
    return item === undefined ? undefined : structuredClone(item);
  }
  /** @returns copies of every cached object */
  list(): T[] {
    return [...this.#items.values()].map((item) => structuredClone(item));
  }
  /** @returns whether the fake counts as synced */
  hasSynced(): boolean {
    return this.#synced;
  }
  /** Registers a handler; returns an unsubscribe. */
  subscribe(handler: (event: InformerEvent<T>) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }
  /** @returns true at once when synced, else false when `signal` aborts */
  waitForSync(signal: AbortSignal): Promise<boolean> {
    if (this.#synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setInterval(() => {
        if (this.#synced) {
          clearInterval(timer);
          resolve(true);
        }
      }, 1);
      signal.addEventListener("abort", () => {
        clearInterval(timer);
        resolve(false);
      }, { once: true });
    });
  }
  /** Stores `object` and notifies subscribers with an add or update event. */
  upsert(object: T): void {
    const key = objectKey(object);
    const old = this.#items.get(key);
    this.#items.set(key, structuredClone(object));
    this.#emit(
      old === undefined
        ? { type: "add", object: structuredClone(object) }
        : { type: "update", object: structuredClone(object), old: structuredClone(old) },
    );
  }
  /** Removes the object under `key` and notifies subscribers. */
  remove(key: string): void {
    const old = this.#items.get(key);
    if (old === undefined) return;
    this.#items.delete(key);
    this.#emit({ type: "delete", object: structuredClone(old), old: structuredClone(old) });
  }
  /** Stores without notifying (a cache that lags behind, for stale-read tests). */
  setQuietly(object: T): void {
    this.#items.set(objectKey(object), structuredClone(object));
  }
  #emit(event: InformerEvent<T>): void {
    for (const handler of this.#handlers) handler(event);
  }
}

/** A recording EventRecorder. */
export class FakeEventRecorder implements EventRecorder {
  /** Every event, in order. */
  readonly events: RecordedEvent[] = [];
  /** Records one event. */
  event(object: EventTarget, type: "Normal" | "Warning", reason: string, message: string): void {
    const name = objectKey(object as Meta);
    this.events.push({ object: `${object.kind}/${name}`, type, reason, message });
  }
  /** @returns the events with `reason` */
  withReason(reason: string): RecordedEvent[] {
    return this.events.filter((event) => event.reason === reason);
  }
}

/** The in-memory cluster: the API server's store is the informers' store (no watch lag). */
export class FakeCluster implements ClusterWriter {
  readonly nodes = new FakeInformer<V1Node>();
  readonly services = new FakeInformer<V1Service>();
  readonly persistentVolumes = new FakeInformer<V1PersistentVolume>();
  readonly events = new FakeEventRecorder();
  /** Every write through the ClusterWriter methods, in order. */
  readonly writes: RecordedWrite[] = [];
  /** Errors to throw on the next calls of a writer method, by method name (FIFO). */
  readonly failNext = new Map<string, KubeApiError[]>();
  #version = 1;

  /** Adds a Node as a client would (assigns a resourceVersion); notifies subscribers. */
  addNode(node: V1Node): V1Node {
    return this.#store(this.nodes, node);
  }
  /** Adds a Service; notifies subscribers. */
  addService(service: V1Service): V1Service {
    return this.#store(this.services, service);
  }
  /** Adds a PersistentVolume; notifies subscribers. */
  addPersistentVolume(volume: V1PersistentVolume): V1PersistentVolume {
    return this.#store(this.persistentVolumes, volume);
  }
  /** Modifies a stored Node as another client would (bumps its resourceVersion). */
  updateNode(name: string, mutate: (node: V1Node) => void): V1Node {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    mutate(node);
    return this.#store(this.nodes, node);
  }
  /** @returns the writes of one verb/kind */
  writesOf(verb: RecordedWrite["verb"], kind: RecordedWrite["kind"] = "Node"): RecordedWrite[] {
    return this.writes.filter((write) => write.verb === verb && write.kind === kind);
  }
  /** Makes the next call of `method` throw `error`. */
  failOnce(method: keyof ClusterWriter, error: KubeApiError): void {
    const list = this.failNext.get(method) ?? [];
    list.push(error);
    this.failNext.set(method, list);
  }

  replaceNode(node: V1Node): Promise<V1Node> {
    return this.#op("replaceNode", () => {
      const name = node.metadata?.name ?? "";
      this.writes.push({ verb: "replace", kind: "Node", key: name, body: structuredClone(node) });
      const current = this.#mustGet(this.nodes, "nodes", name);
      const sent = node.metadata?.resourceVersion;
      if (sent && sent !== current.metadata?.resourceVersion) {
        throw new KubeApiError(
          `Operation cannot be fulfilled on nodes "${name}": the object has been modified`,
          { code: 409, reason: "Conflict" },
        );
      }
      // A PUT to the main resource ignores status changes, as the real API server does.
      const next = structuredClone(node);
      next.status = current.status;
      return this.#store(this.nodes, next);
    });
  }
  patchNode(name: string, patch: unknown, type: PatchType): Promise<V1Node> {
    return this.#patch("patchNode", "patch", "Node", this.nodes, "nodes", name, patch, type);
  }
  patchNodeStatus(name: string, patch: unknown, type: PatchType): Promise<V1Node> {
    return this.#patch(
      "patchNodeStatus",
      "patchStatus",
      "Node",
      this.nodes,
      "nodes",
      name,
      patch,
      type,
    );
  }
  deleteNode(name: string): Promise<void> {
    return this.#op("deleteNode", () => {
      this.writes.push({ verb: "delete", kind: "Node", key: name });
      this.#mustGet(this.nodes, "nodes", name);
      this.nodes.remove(name);
    });
  }
  patchServiceStatus(
    namespace: string,
    name: string,
    patch: unknown,
    type: PatchType,
  ): Promise<V1Service> {
    return this.#patch(
      "patchServiceStatus",
      "patchStatus",
      "Service",
      this.services,
      "services",
      `${namespace}/${name}`,
      patch,
      type,
    );
  }
  patchPersistentVolume(
    name: string,
    patch: unknown,
    type: PatchType,
  ): Promise<V1PersistentVolume> {
    return this.#patch(
      "patchPersistentVolume",
      "patch",
      "PersistentVolume",
      this.persistentVolumes,
      "persistentvolumes",
      name,
      patch,
      type,
    );
  }

  #patch<T extends Meta>(
    method: keyof ClusterWriter,
    verb: RecordedWrite["verb"],
    kind: RecordedWrite["kind"],
    informer: FakeInformer<T>,
    resource: string,
    key: string,
    patch: unknown,
    type: PatchType,
  ): Promise<T> {
    return this.#op(method, () => {
      this.writes.push({ verb, kind, key, patchType: type, body: structuredClone(patch) });
      const current = this.#mustGet(informer, resource, key);
      const next = applyPatch(current, patch, type) as T;
      const sent = (patch as Meta | undefined)?.metadata?.resourceVersion;
      if (type !== "json" && sent && sent !== current.metadata?.resourceVersion) {
        throw new KubeApiError(`Operation cannot be fulfilled on ${resource} "${key}"`, {
          code: 409,
          reason: "Conflict",
        });
      }
      // A status patch changes only status (a Service's also metadata: its status strategy
      // resets only spec, as kube-apiserver does); a main-resource patch leaves status alone.
      const merged = structuredClone(current) as T & { status?: unknown };
      if (verb === "patchStatus") {
        merged.status = (next as T & { status?: unknown }).status;
        if (kind === "Service") merged.metadata = next.metadata;
      } else {
        Object.assign(merged, next, { status: (current as T & { status?: unknown }).status });
      }
      return this.#store(informer, merged);
    });
  }
  #op<R>(method: keyof ClusterWriter, body: () => R): Promise<R> {
    const queued = this.failNext.get(method);
    const error = queued?.shift();
    if (error) return Promise.reject(error);
    try {
      return Promise.resolve(body());
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  }
  #mustGet<T extends Meta>(informer: FakeInformer<T>, resource: string, key: string): T {
    const current = informer.get(key);
    if (!current) {
      throw new KubeApiError(`${resource} "${key}" not found`, { code: 404, reason: "NotFound" });
    }
    return current;
  }
  #store<T extends Meta>(informer: FakeInformer<T>, object: T): T {
    const copy = structuredClone(object);
    copy.metadata = { ...copy.metadata, resourceVersion: String(++this.#version) };
    informer.upsert(copy);
    return structuredClone(copy);
  }
}
