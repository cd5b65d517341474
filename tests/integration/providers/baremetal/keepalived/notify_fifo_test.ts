import assert from "node:assert/strict";
import {
  type NotifyEvent,
  parseNotifyLine,
  readNotifyFifo,
} from "../../../../../providers/baremetal/keepalived/notify_fifo.ts";
import { holdsFor, pollUntil } from "../../../../_support/poll.ts";

Deno.test("parseNotifyLine() reads keepalived 2.2.7's instance lines", () => {
  assert.deepEqual(parseNotifyLine('INSTANCE "keelson_v4_g5" MASTER 200'), {
    kind: "state",
    instance: "keelson_v4_g5",
    state: "MASTER",
    priority: 200,
  });
  assert.deepEqual(parseNotifyLine('INSTANCE "VI_1" BACKUP 100')?.kind, "state");
  assert.deepEqual(parseNotifyLine('INSTANCE "VI_1" FAULT 0'), {
    kind: "state",
    instance: "VI_1",
    state: "FAULT",
    priority: 0,
  });
  assert.deepEqual(parseNotifyLine('INSTANCE "VI_1" STOP 150')?.kind, "state");
  assert.deepEqual(parseNotifyLine('INSTANCE "VI_1" DELETED'), {
    kind: "deleted",
    instance: "VI_1",
  });
});

Deno.test("parseNotifyLine() drops group lines, non-state notifications and anything malformed", () => {
  for (
    const line of [
      'GROUP "G1" MASTER',
      'INSTANCE "VI_1" MASTER_RX_LOWER_PRI 100',
      'INSTANCE "VI_1" MASTER_PRIORITY 100',
      'INSTANCE "VI_1" MASTER 256',
      'INSTANCE "VI_1" MASTER 100 extra',
      "INSTANCE VI_1 MASTER 100",
      'INSTANCE "a b" MASTER 100',
      'INSTANCE "VI_1"; rm -rf / MASTER 100',
      'INSTANCE "VI_1" master 100',
      "",
      `INSTANCE "${"x".repeat(65)}" MASTER 100`,
    ]
  ) {
    assert.equal(parseNotifyLine(line), undefined, line);
  }
});

async function mkfifo(path: string): Promise<void> {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.equal(out.code, 0, "mkfifo");
}

async function writeFifo(path: string, text: string): Promise<void> {
  const file = await Deno.open(path, { write: true });
  await file.write(new TextEncoder().encode(text));
  file.close();
}

/** A running `readNotifyFifo` and what it reported. */
interface FifoReader {
  /** Its fresh directory. */
  dir: string;
  /** The FIFO's path in it. */
  path: string;
  events: NotifyEvent[];
  /** How often it opened the FIFO, and said it was gone. */
  counts: { opens: number; gones: number };
  /** Aborts it, awaits its end and removes its directory. */
  stop(): Promise<void>;
}

/**
 * Starts `readNotifyFifo` on `keepalived-notify.fifo` in a fresh directory (retrying every 50 ms),
 * recording what it reports.
 * @param fifoFirst make the FIFO before the reader starts (else keepalived has not made it yet)
 */
async function startReader(fifoFirst = false): Promise<FifoReader> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/keepalived-notify.fifo`;
  if (fifoFirst) await mkfifo(path);
  const events: NotifyEvent[] = [];
  const counts = { opens: 0, gones: 0 };
  const controller = new AbortController();
  const reading = readNotifyFifo({
    path,
    onEvent: (e) => events.push(e),
    onOpen: () => counts.opens++,
    onGone: () => counts.gones++,
    signal: controller.signal,
    retryMs: 50,
  });
  const stop = async () => {
    controller.abort();
    await reading;
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, path, events, counts, stop };
}

Deno.test({
  name:
    "readNotifyFifo() reads lines in order, across partial writes, and reopens a FIFO keepalived recreated",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { path, events, counts, stop } = await startReader();
    try {
      await mkfifo(path); // after the reader started: it waits for keepalived to create it
      await pollUntil("the first open", () => counts.opens === 1);
      await writeFifo(path, 'INSTANCE "a" BACKUP 100\nINSTANCE "a" MAS');
      await writeFifo(path, 'TER 100\ngarbage\nGROUP "g" MASTER\n');
      await pollUntil("two events", () => events.length === 2);
      assert.deepEqual(events.map((e) => e.kind === "state" && e.state), ["BACKUP", "MASTER"]);

      // keepalived stops (deletes its FIFO) and starts again (a new FIFO at the same path)
      await Deno.remove(path);
      await mkfifo(path);
      await pollUntil("the reopen", () => counts.opens === 2);
      await writeFifo(path, 'INSTANCE "a" STOP 100\n');
      await pollUntil("the event from the new FIFO", () => events.length === 3);
      assert.deepEqual(events[2], { kind: "state", instance: "a", state: "STOP", priority: 100 });
    } finally {
      await stop();
    }
  },
});

Deno.test({
  name:
    "readNotifyFifo() says the FIFO is gone (no keepalived) at the start and after a stop, once each, not when a reload replaced it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { dir, path, counts, stop } = await startReader();
    try {
      await pollUntil("gone at the start: keepalived has not created it", () => counts.gones === 1);
      await holdsFor("said once while it stays absent", () => counts.gones === 1, { forMs: 200 });
      await mkfifo(path);
      await pollUntil("the first open", () => counts.opens === 1);
      // a reload: keepalived puts a new FIFO at the path at once
      await mkfifo(`${dir}/next.fifo`);
      await Deno.rename(`${dir}/next.fifo`, path);
      await pollUntil("the reopen after the reload", () => counts.opens === 2);
      assert.equal(counts.gones, 1, "a reload is not a stop");
      // a stop: keepalived deletes its FIFO
      await Deno.remove(path);
      await pollUntil("gone after the stop", () => counts.gones === 2);
      await holdsFor("said once after the stop", () => counts.gones === 2, { forMs: 200 });
      await mkfifo(path);
      await pollUntil("the open after keepalived started again", () => counts.opens === 3);
    } finally {
      await stop();
    }
  },
});

Deno.test("readNotifyFifo() refuses a regular file in place of the FIFO and ends on abort", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/fifo`;
  await Deno.writeTextFile(path, 'INSTANCE "a" MASTER 100\n');
  const events: NotifyEvent[] = [];
  const controller = new AbortController();
  const reading = readNotifyFifo({
    path,
    onEvent: (e) => events.push(e),
    signal: controller.signal,
    retryMs: 20,
  });
  await holdsFor("no event from a regular file", () => events.length === 0, { forMs: 100 });
  controller.abort();
  await reading;
  assert.deepEqual(events, []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test({
  name:
    "readNotifyFifo() drops an over-long line whole: its tail is never taken for a state change",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { path, events, counts, stop } = await startReader(true);
    try {
      await pollUntil("the open", () => counts.opens === 1);
      // 600 junk bytes, a pause (the reader has dropped them), then what looks like a line
      await writeFifo(path, "x".repeat(600));
      await new Promise((r) => setTimeout(r, 200));
      await writeFifo(path, 'INSTANCE "a" MASTER 100\n');
      // one 4,132-byte write: more than one read of the reader's 4 KiB buffer
      const line = 'INSTANCE "b" MASTER 100\n';
      await writeFifo(path, "y".repeat(4132 - line.length) + line);
      // a real line after them is read: the reader is back in step
      await writeFifo(path, 'INSTANCE "c" BACKUP 100\n');
      await pollUntil("the line after the junk", () => events.length > 0);
      await holdsFor("no event after it", () => events.length === 1, { forMs: 100 });
      // before: "a" and "b" became MASTER
      assert.deepEqual(events, [{ kind: "state", instance: "c", state: "BACKUP", priority: 100 }]);
    } finally {
      await stop();
    }
  },
});
