import assert from "node:assert/strict";
import { guardBody } from "../../../src/kube/abortable_body.ts";
import { readBoundedBody } from "../../../src/kube/bounded_body.ts";

const readAll = async (body: ReadableStream<Uint8Array>) =>
  (await readBoundedBody(body, { maxBytes: 1024, what: "a test body" })).bytes;

/** A body that sends one chunk and then nothing (a silent connection), recording its cancel. */
function silentBody(): { body: ReadableStream<Uint8Array>; cancelled: () => unknown } {
  let reason: unknown = "not cancelled";
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new Uint8Array([1, 2, 3]));
        return;
      }
      return new Promise(() => {}); // never answers
    },
    cancel(why) {
      reason = why;
    },
  });
  return { body, cancelled: () => reason };
}

Deno.test("guardBody() rejects a pending read at once on abort and cancels the body", async () => {
  const { body, cancelled } = silentBody();
  const stop = new AbortController();
  let ended = 0;
  const reader = guardBody(body, stop.signal, () => ended++).getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([1, 2, 3]));
  const pending = reader.read();
  const reason = new Error("stop");
  stop.abort(reason);
  await assert.rejects(pending, (error) => error === reason);
  assert.equal(cancelled(), reason, "the underlying body was cancelled with the reason");
  assert.equal(ended, 1);
});

Deno.test("guardBody() with an aborted signal fails the first read", async () => {
  const { body, cancelled } = silentBody();
  const reason = new Error("already");
  await assert.rejects(readAll(guardBody(body, AbortSignal.abort(reason))), (e) => e === reason);
  assert.equal(cancelled(), reason);
});

Deno.test("guardBody() passes a whole body through and calls onEnd once", async () => {
  let ended = 0;
  const body = new Response("hello world").body!;
  const bytes = await readAll(guardBody(body, new AbortController().signal, () => ended++));
  assert.equal(new TextDecoder().decode(bytes), "hello world");
  assert.equal(ended, 1);
});
