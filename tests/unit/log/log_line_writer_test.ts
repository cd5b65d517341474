import assert from "node:assert/strict";
import { LogLineWriter, type LogOutput } from "../../../src/log/log_line_writer.ts";
import { turns } from "../../_support/poll.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const line = (text: string) => encoder.encode(`${text}\n`);
const tick = () => turns();

/** An output that takes everything, or only what `limit` allows per write. */
class RecordingOutput implements LogOutput {
  readonly writes: string[] = [];
  constructor(readonly limit = Infinity) {}
  write(bytes: Uint8Array): Promise<number> {
    const n = Math.min(bytes.length, this.limit);
    this.writes.push(decoder.decode(bytes.subarray(0, n)));
    return Promise.resolve(n);
  }
  get text(): string {
    return this.writes.join("");
  }
}

/** An output whose writes wait until `release()`, as write(2) waits on a full pipe. */
class StalledOutput implements LogOutput {
  calls = 0;
  #release: Array<() => void> = [];
  readonly taken: string[] = [];
  write(bytes: Uint8Array): Promise<number> {
    this.calls++;
    return new Promise((resolve) => {
      this.#release.push(() => {
        this.taken.push(decoder.decode(bytes));
        resolve(bytes.length);
      });
    });
  }
  /** Lets every waiting write finish. */
  release(): void {
    const waiting = this.#release;
    this.#release = [];
    for (const resolve of waiting) resolve();
  }
}

/** An output whose reader went away: every write rejects as Deno's does (EPIPE). */
class ClosedOutput implements LogOutput {
  calls = 0;
  write(): Promise<number> {
    this.calls++;
    return Promise.reject(new Deno.errors.BrokenPipe("Broken pipe (os error 32)"));
  }
}

Deno.test("LogLineWriter writes every line in order, joined into few writes", async () => {
  const output = new RecordingOutput();
  const writer = new LogLineWriter(output);
  for (let i = 0; i < 100; i++) assert.equal(writer.write(line(`line ${i}`)), true);
  assert.equal(await writer.flush(1000), true);
  assert.equal(
    output.text,
    Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(""),
  );
  assert.ok(output.writes.length < 100, `${output.writes.length} writes for 100 lines`);
  assert.equal(writer.bufferedBytes, 0);
  assert.deepEqual(writer.dropped, { full: 0, closed: 0 });
});

Deno.test("LogLineWriter writes the rest of a line the output took only in part", async () => {
  const output = new RecordingOutput(3);
  const writer = new LogLineWriter(output);
  writer.write(line("a longer line"));
  writer.write(line("and another"));
  assert.equal(await writer.flush(1000), true);
  assert.equal(output.text, "a longer line\nand another\n");
});

Deno.test("LogLineWriter drops lines beyond its bound while the output stalls, and says so after", async () => {
  const output = new StalledOutput();
  const writer = new LogLineWriter(output, {
    maxBufferedBytes: 1000,
    dropNotice: (dropped) => line(`dropped ${dropped}`),
  });
  let queued = 0;
  for (let i = 0; i < 1000; i++) {
    if (writer.write(line(`line ${String(i).padStart(4, "0")}`))) queued++;
  }
  // 10 bytes a line: the 1000-byte bound holds 100 of them, the write in progress included
  assert.equal(queued, 100);
  assert.ok(writer.bufferedBytes <= 1000);
  assert.deepEqual(writer.dropped, { full: 900, closed: 0 });
  assert.equal(output.calls, 1, "one write at a time");

  // the bound also ends the wait for a flush
  const began = performance.now();
  assert.equal(await writer.flush(50), false);
  assert.ok(performance.now() - began < 1000);

  // the output takes lines again: the first new line is preceded by the count of lost ones
  output.release();
  await tick();
  output.release();
  await tick();
  assert.equal(writer.write(line("after")), true);
  output.release();
  await tick();
  output.release();
  assert.equal(await writer.flush(1000), true);
  const text = output.taken.join("");
  assert.ok(text.startsWith("line 0000\nline 0001\n"));
  assert.ok(text.endsWith("line 0099\ndropped 900\nafter\n"), text.slice(-60));
  assert.deepEqual(writer.dropped, { full: 900, closed: 0 });
});

Deno.test("LogLineWriter gives a closed output up after one failed write, with nothing thrown or rejected", async () => {
  const rejections: unknown[] = [];
  const onRejection = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    rejections.push(event.reason);
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  try {
    const output = new ClosedOutput();
    const writer = new LogLineWriter(output);
    writer.write(line("first"));
    writer.write(line("second"));
    await tick();
    assert.equal(writer.closed, true);
    for (let i = 0; i < 10_000; i++) assert.equal(writer.write(line(`later ${i}`)), false);
    await tick();
    assert.equal(output.calls, 1, "no write after the first failure: no retry loop");
    assert.deepEqual(writer.dropped, { full: 0, closed: 10_002 });
    assert.equal(writer.bufferedBytes, 0);
    assert.equal(await writer.flush(1000), true, "nothing left to wait for");
    await tick();
    assert.deepEqual(rejections, []);
  } finally {
    globalThis.removeEventListener("unhandledrejection", onRejection);
  }
});

Deno.test("LogLineWriter drops a line larger than its whole bound", async () => {
  const output = new RecordingOutput();
  const writer = new LogLineWriter(output, { maxBufferedBytes: 16 });
  assert.equal(writer.write(line("x".repeat(100))), false);
  assert.equal(writer.write(line("fits")), true);
  assert.equal(await writer.flush(1000), true);
  assert.equal(output.text, "fits\n");
  assert.deepEqual(writer.dropped, { full: 1, closed: 0 });
});
