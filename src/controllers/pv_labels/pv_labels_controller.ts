/**
 * The PV-labels controller: a PersistentVolume whose node affinity pins it to one Node gets that
 * Node's `topology.kubernetes.io/zone` and `region` labels (one merge patch, only when they
 * differ). Watches PVs, and Nodes so that a PV created before its Node was labelled catches up.
 *
 * @module
 */
import type { V1Node, V1PersistentVolume } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { ClusterWriter, Informer } from "../../kube/ports.ts";
import { objectKey } from "../../kube/ports.ts";
import { runWorkers, WorkQueue } from "../../kube/work_queue.ts";
import { done, type SyncResult } from "../../kube/sync_result.ts";
import { pinnedNode, resolvePinnedNode, volumeLabelsToSet } from "./pv_zone_labels.ts";

/** The queue name. */
export const PV_LABELS_QUEUE_NAME = "PersistentVolumeLabels";

/** What the controller reads and writes. */
export interface PvLabelsDeps {
  volumes: Informer<V1PersistentVolume>;
  nodes: Informer<V1Node>;
  writer: ClusterWriter;
  registry: Registry;
}

/** The PV-labels controller. */
export class PvLabelsController {
  #deps: PvLabelsDeps;
  #queue: WorkQueue;

  /** @param deps PV and Node informers, writer, metrics registry */
  constructor(deps: PvLabelsDeps) {
    this.#deps = deps;
    this.#queue = new WorkQueue({ name: PV_LABELS_QUEUE_NAME, registry: deps.registry });
  }

  /**
   * Runs until `signal` aborts.
   * @param signal stops the controller
   * @returns when the worker has stopped
   */
  async run(signal: AbortSignal): Promise<void> {
    const offVolumes = this.#deps.volumes.subscribe((event) => {
      if (event.type !== "delete") this.#queue.add(objectKey(event.object));
    });
    const offNodes = this.#deps.nodes.subscribe((event) => {
      if (event.type !== "delete") this.#enqueueVolumesOf(event.object);
    });
    try {
      const synced = await this.#deps.volumes.waitForSync(signal) &&
        await this.#deps.nodes.waitForSync(signal);
      if (!synced) return;
      for (const volume of this.#deps.volumes.list()) this.#queue.add(objectKey(volume));
      await runWorkers(this.#queue, 1, (key) => this.sync(key), signal);
    } finally {
      offVolumes();
      offNodes();
      this.#queue.shutDown();
    }
  }

  /**
   * Labels one PV when it is pinned to a labelled Node.
   * @param key the PV name
   * @returns `done` (a failed patch throws and is retried by the queue)
   */
  async sync(key: string): Promise<SyncResult> {
    const volume = this.#deps.volumes.get(key);
    if (!volume) return done();
    const labels = volumeLabelsToSet(volume, this.#deps.nodes);
    if (Object.keys(labels).length === 0) return done();
    await this.#deps.writer.patchPersistentVolume(key, { metadata: { labels } }, "merge");
    return done();
  }

  #enqueueVolumesOf(node: V1Node): void {
    for (const volume of this.#deps.volumes.list()) {
      const pin = pinnedNode(volume);
      if (pin && resolvePinnedNode(pin, this.#deps.nodes)?.metadata?.name === node.metadata?.name) {
        this.#queue.add(objectKey(volume));
      }
    }
  }
}
