/**
 * A fake EventRecorder that keeps every event as a RecordedEvent, in order. `object` is
 * `Kind/name` or `Kind/namespace/name` (the same format as FakeEventRecorder in fake_cluster.ts).
 *
 * @module
 */
import type { EventRecorder, EventTarget, RecordedEvent } from "../../../src/kube/ports.ts";

/** Records events in memory for assertions. */
export class RecordingEventRecorder implements EventRecorder {
  /** Every event, in order. */
  readonly events: RecordedEvent[] = [];

  /**
   * Records one event.
   * @param object the involved object
   * @param type `Normal` or `Warning`
   * @param reason CamelCase reason
   * @param message the message
   */
  event(object: EventTarget, type: "Normal" | "Warning", reason: string, message: string): void {
    // EventTarget is either a flat ObjectReference or an object with metadata
    const meta = "metadata" in object
      ? object.metadata
      : object as { name?: string; namespace?: string };
    const name = meta?.name ?? "";
    const namespace = meta?.namespace;
    const key = namespace ? `${namespace}/${name}` : name;
    this.events.push({ object: `${object.kind ?? ""}/${key}`, type, reason, message });
  }

  /**
   * @param reason the reason to look for
   * @returns the events with `reason`
   */
  withReason(reason: string): RecordedEvent[] {
    return this.events.filter((event) => event.reason === reason);
  }

  /** Forgets every recorded event. */
  clear(): void {
    this.events.length = 0;
  }
}
