import assert from "node:assert/strict";
import { LineSplitter, parseWatchLine } from "../../../src/kube/watch_lines.ts";
import { ResponseTooLargeError } from "../../../src/kube/bounded_body.ts";

Deno.test("LineSplitter.push() joins an event split across chunks", () => {
  const lines = new LineSplitter();
  assert.deepEqual(lines.push('{"type":"ADD'), []);
  assert.deepEqual(lines.push('ED","object":{'), []);
  assert.ok(lines.pending > 0);
  assert.deepEqual(lines.push("}}\n"), ['{"type":"ADDED","object":{}}']);
  assert.equal(lines.pending, 0);
});

Deno.test("LineSplitter.push() returns every complete line of a chunk in order and keeps the tail", () => {
  const lines = new LineSplitter();
  assert.deepEqual(lines.push('{"a":1}\n{"b":2}\n{"c"'), ['{"a":1}', '{"b":2}']);
  assert.deepEqual(lines.push(":3}\n"), ['{"c":3}']);
});

Deno.test("LineSplitter.push() drops empty lines and CRLF endings", () => {
  const lines = new LineSplitter();
  assert.deepEqual(lines.push('\n\r\n{"a":1}\r\n\n'), ['{"a":1}']);
});

Deno.test("LineSplitter.flush() returns an unterminated last line once", () => {
  const lines = new LineSplitter();
  lines.push('{"a":1}\n{"b"');
  lines.push(":2}");
  assert.equal(lines.flush(), '{"b":2}');
  assert.equal(lines.flush(), undefined);
});

Deno.test("LineSplitter.push() handles a 300 KB event delivered in 1 KB chunks", () => {
  const big = JSON.stringify({ type: "MODIFIED", object: { data: "x".repeat(300_000) } });
  const text = big + "\n";
  const lines = new LineSplitter();
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 1024) out.push(...lines.push(text.slice(i, i + 1024)));
  assert.equal(out.length, 1);
  assert.equal(parseWatchLine(out[0]!).type, "MODIFIED");
});

Deno.test("parseWatchLine() returns type and object", () => {
  assert.deepEqual(parseWatchLine('{"type":"DELETED","object":{"metadata":{"name":"n"}}}'), {
    type: "DELETED",
    object: { metadata: { name: "n" } },
  });
});

Deno.test("parseWatchLine() throws SyntaxError on a non-event line", () => {
  assert.throws(() => parseWatchLine("<html>"), SyntaxError);
  assert.throws(() => parseWatchLine('{"kind":"Status"}'), SyntaxError);
});

Deno.test("LineSplitter.push() returns a chunk holding one whole event as that line, and nothing for a bare newline", () => {
  const lines = new LineSplitter();
  assert.deepEqual(lines.push('{"a":1}\n'), ['{"a":1}']);
  assert.deepEqual(lines.push("\n"), []);
  assert.deepEqual(lines.push('{"b":2}\r\n'), ['{"b":2}']);
  assert.equal(lines.pending, 0);
  assert.equal(lines.flush(), undefined);
});

Deno.test("LineSplitter refuses a line past its bound, finished or not, and accepts one of exactly the bound", () => {
  const exact = new LineSplitter(10);
  assert.deepEqual(exact.push("0123456789\n"), ["0123456789"]);
  assert.deepEqual(exact.push("01234"), []);
  assert.deepEqual(exact.push("56789\n"), ["0123456789"]);
  // a stream that never sends its newline stops at the bound instead of growing
  const endless = new LineSplitter(10);
  endless.push("012345");
  assert.throws(() => endless.push("67890"), ResponseTooLargeError);
  assert.equal(endless.pending, 0, "nothing of the refused line is kept");
  // a long line finished inside one chunk among others
  assert.throws(() => new LineSplitter(10).push('{"a":1}\n01234567890\n'), /one watch event/);
});
