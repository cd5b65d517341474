import assert from "node:assert/strict";
import {
  terminalSafe,
  terminalSafeJson,
  terminalSafeLines,
  terminalSafeLogValue,
} from "../../../src/text/terminal_safe.ts";

/** Every character the module must never let through (other than newline and tab in lines). */
const DANGEROUS = [
  ...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)),
  "\x7f",
  ...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(0x80 + i)),
  "\u2028",
  "\u2029",
  "\u202a",
  "\u202b",
  "\u202c",
  "\u202d",
  "\u202e",
  "\u2066",
  "\u2067",
  "\u2068",
  "\u2069",
];

Deno.test("terminalSafe() shows every control character as an escape, newline and tab included", () => {
  assert.equal(
    terminalSafe("cp-1\x1b]0;owned\x07\x1b[2J\nHealthy\t\r"),
    "cp-1\\x1b]0;owned\\x07\\x1b[2J\\nHealthy\\t\\r",
  );
  assert.equal(terminalSafe("\u009b2J"), "\\x9b2J");
  assert.equal(terminalSafe("a\u202eb\u2066c\u2028"), "a\\u202eb\\u2066c\\u2028");
  for (const c of DANGEROUS) {
    const out = terminalSafe(`x${c}y`);
    assert.ok(![...out].some((o) => DANGEROUS.includes(o)), JSON.stringify(out));
  }
  // ordinary text, non-Latin letters and emoji are left alone
  assert.equal(terminalSafe("shop/web ünïcode 日本 🚀 \\x1b"), "shop/web ünïcode 日本 🚀 \\x1b");
});

Deno.test("terminalSafeLines() keeps newline and tab; with sgr, only colour codes", () => {
  assert.equal(terminalSafeLines("a\tb\nc\x1b[2Jd\re"), "a\tb\nc\\x1b[2Jd\\re");
  assert.equal(
    terminalSafeLines("\x1b[31mred\x1b[0m \x1b[2J \x1b]0;t\x07 \x1b[1;32m", { sgr: true }),
    "\x1b[31mred\x1b[0m \\x1b[2J \\x1b]0;t\\x07 \x1b[1;32m",
  );
  for (const c of DANGEROUS) {
    if (c === "\n" || c === "\t") continue;
    assert.ok(!terminalSafeLines(`x${c}y`).includes(c));
    assert.ok(!terminalSafeLines(`x${c}y`, { sgr: true }).includes(c));
  }
});

Deno.test("terminalSafeJson() keeps the data exact and the text free of control characters", () => {
  const value = { holder: "a\x1b[2J\u009b\u202e\u2028\x7fz", n: 1 };
  const json = terminalSafeJson(JSON.stringify(value, null, 2));
  assert.deepEqual(JSON.parse(json), value);
  assert.ok(![...json].some((c) => DANGEROUS.includes(c) && c !== "\n"), json);
});

Deno.test("terminalSafeLogValue() renders as inspect does, on one line", () => {
  const inspect = (v: unknown) => typeof v === "string" ? v : JSON.stringify(v);
  assert.equal(
    terminalSafeLogValue("x\n2026 [ERR] forged\x1b[2J", inspect),
    "x\\n2026 [ERR] forged\\x1b[2J",
  );
  assert.equal(terminalSafeLogValue({ a: 1 }, inspect), '{"a":1}');
});
