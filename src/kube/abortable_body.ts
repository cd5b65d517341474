/**
 * Response bodies whose every read ends when a signal aborts, whatever the runtime does.
 *
 * Why this exists: Deno 2.9.6's `fetch` follows the caller's `AbortSignal` through an internal
 * signal that the caller's signal holds only by a `WeakRef` (the `AbortSignal.any` rule). Once
 * `fetch()` has resolved nothing else holds that internal signal, so the first garbage collection
 * frees it, and from then on aborting the caller's signal no longer errors the response body: a
 * pending `reader.read()` waits for the next byte from the server, or forever on a silent
 * connection. Garbage collections come with allocations, so a watch that carried some thousands
 * of events stopped ending on abort. (The same class of bug as nodejs/node#55428 in undici.)
 * Here the abort listener is our own, strongly held, and it cancels the body itself, which also
 * releases the connection.
 *
 * @module
 */

/**
 * Wraps a body so that a pending read rejects with the signal's reason as soon as it aborts, and
 * the underlying body is cancelled then (which closes the stream on the connection).
 * @param body the response body
 * @param signal aborts every read; listened to directly, never through fetch
 * @param onEnd called once when the body ends, errors, is cancelled or the signal aborts
 * @returns the guarded body
 */
export function guardBody(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  onEnd: () => void = () => {},
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  let rejectPending: ((reason: unknown) => void) | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    signal.removeEventListener("abort", onAbort);
    onEnd();
  };
  const onAbort = () => {
    reader.cancel(signal.reason).catch(() => {});
    rejectPending?.(signal.reason);
    end();
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (signal.aborted) throw signal.reason;
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await new Promise((resolve, reject) => {
          rejectPending = reject;
          reader.read().then(resolve, reject);
        });
      } catch (error) {
        end();
        throw error;
      } finally {
        rejectPending = undefined;
      }
      if (result.done) {
        end();
        controller.close();
      } else {
        controller.enqueue(result.value);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason).catch(() => {});
    },
  });
}
