import assert from "node:assert/strict";
import {
  formatBytes,
  readBoundedBody,
  readBoundedResponse,
  ResponseTooLargeError,
} from "../../../src/kube/bounded_body.ts";
import { createHttpTransport } from "../../../src/kube/http_transport.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";

/**
 * A body of `chunks` chunks of `size` bytes (endless when `chunks` is Infinity), recording how
 * many were pulled and whether (and why) it was cancelled.
 */
function countedBody(size: number, chunks: number) {
  let pulled = 0;
  let cancelled: { reason: unknown } | undefined;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= chunks) return controller.close();
      pulled++;
      controller.enqueue(new Uint8Array(size).fill(0x61));
    },
    cancel(reason) {
      cancelled = { reason };
    },
  }, { highWaterMark: 0 });
  return { body, pulled: () => pulled, cancelled: () => cancelled };
}

Deno.test("readBoundedBody() joins a chunked body under its cap into one buffer", async () => {
  const { body, cancelled } = countedBody(1000, 7);
  const { bytes, truncated } = await readBoundedBody(body, { maxBytes: 10_000, what: "a test" });
  assert.equal(bytes.byteLength, 7000);
  assert.ok(bytes.every((b) => b === 0x61));
  assert.equal(truncated, false);
  assert.equal(cancelled(), undefined);
});

Deno.test("readBoundedBody() accepts a body of exactly the cap and refuses one byte more", async () => {
  const exact = countedBody(1000, 4);
  assert.equal(
    (await readBoundedBody(exact.body, { maxBytes: 4000, what: "a test" })).bytes.byteLength,
    4000,
  );
  const over = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(4000));
      controller.enqueue(new Uint8Array(1));
      controller.close();
    },
  });
  await assert.rejects(
    readBoundedBody(over, { maxBytes: 4000, what: "one test page" }),
    (error: unknown) =>
      error instanceof ResponseTooLargeError && error.maxBytes === 4000 &&
      /larger than 4000 bytes, the most Keelson reads of one test page/.test(error.message),
  );
});

Deno.test("readBoundedBody() stops an endless body at its cap and cancels it", async () => {
  const { body, pulled, cancelled } = countedBody(64 * 1024, Infinity);
  await assert.rejects(
    readBoundedBody(body, { maxBytes: 1024 * 1024, what: "one list page" }),
    /larger than 1 MiB, the most Keelson reads of one list page; it stopped reading/,
  );
  // 16 chunks fill the cap exactly; the 17th is refused, and nothing after it is asked for
  assert.equal(pulled(), 17);
  assert.ok(cancelled(), "the body was cancelled, so the connection stops sending it");
});

Deno.test("readBoundedBody() refuses a declared Content-Length above its cap without reading", async () => {
  const { body, pulled, cancelled } = countedBody(10, 1);
  await assert.rejects(
    readBoundedBody(body, { maxBytes: 100, what: "one object", declaredLength: "101" }),
    ResponseTooLargeError,
  );
  assert.equal(pulled(), 0);
  assert.ok(cancelled());
});

Deno.test("readBoundedBody() with truncate keeps exactly the cap, drops the rest and cancels", async () => {
  const { body, cancelled } = countedBody(300, Infinity);
  const { bytes, truncated } = await readBoundedBody(body, {
    maxBytes: 1000,
    what: "an error answer",
    truncate: true,
  });
  assert.equal(bytes.byteLength, 1000);
  assert.equal(truncated, true);
  assert.ok(cancelled());
});

Deno.test("readBoundedBody() ends a read waiting on a silent body when its signal aborts", async () => {
  let cancelled: unknown;
  const silent = new ReadableStream<Uint8Array>({
    pull: () => new Promise(() => {}),
    cancel(reason) {
      cancelled = reason;
    },
  });
  const stop = new AbortController();
  const reading = readBoundedBody(silent, { maxBytes: 100, what: "x", signal: stop.signal });
  const reason = new Error("stop");
  stop.abort(reason);
  await assert.rejects(reading, (error) => error === reason);
  assert.equal(cancelled, reason);
});

Deno.test("readBoundedBody() reads a null body as empty", async () => {
  const { bytes } = await readBoundedBody(null, { maxBytes: 1, what: "x" });
  assert.equal(bytes.byteLength, 0);
});

Deno.test("formatBytes() names whole MiB and KiB", () => {
  assert.equal(formatBytes(64 * 1024 * 1024), "64 MiB");
  assert.equal(formatBytes(64 * 1024), "64 KiB");
  assert.equal(formatBytes(1000), "1000 bytes");
});

Deno.test("the transport fails a 2xx body past the request's cap and cuts an error body", async () => {
  let sent = 0;
  const endless = () =>
    new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 65536;
        controller.enqueue(new Uint8Array(65536).fill(0x20));
      },
    });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new Response(endless(), { status: new URL(request.url).pathname === "/err" ? 500 : 200 }),
  );
  const transport = createHttpTransport(
    { server: `http://127.0.0.1:${server.addr.port}`, source: "test" },
    { registry: createMetricsRegistry(), pingIntervalMs: 0 },
  );
  try {
    await assert.rejects(
      transport.fetch("/ok", { maxBodyBytes: 1024 * 1024, bodyName: "one list page" }),
      (error: unknown) =>
        error instanceof ResponseTooLargeError && /1 MiB.*one list page/.test(error.message),
    );
    const failed = await transport.fetch("/err");
    assert.equal(failed.status, 500);
    assert.equal((await failed.arrayBuffer()).byteLength, 64 * 1024);
    // the server stopped being read: far less than a gigabyte went out
    assert.ok(sent < 64 * 1024 * 1024, `the server wrote ${sent} bytes`);
  } finally {
    transport.close();
    await server.shutdown();
  }
});

Deno.test("readBoundedResponse() trusts a declared length only for an uncompressed body", async () => {
  const small = new Response("hello", { headers: { "content-length": "5" } });
  const read = await readBoundedResponse(small, { maxBytes: 5, what: "one object" });
  assert.equal(new TextDecoder().decode(read.bytes), "hello");
  // fetch inflates a gzip body under its compressed Content-Length: only inflated bytes count
  const { body, cancelled } = countedBody(64 * 1024, Infinity);
  const inflated = new Response(body, {
    headers: { "content-length": "10", "content-encoding": "gzip" },
  });
  await assert.rejects(
    readBoundedResponse(inflated, { maxBytes: 1024 * 1024, what: "one list page" }),
    ResponseTooLargeError,
  );
  assert.ok(cancelled());
});
