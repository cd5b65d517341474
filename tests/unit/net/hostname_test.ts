import assert from "node:assert/strict";
import { hostname } from "../../../src/net/hostname.ts";

Deno.test("hostname() reports the OS name, and its first label in the short form", () => {
  const full = Deno.hostname();
  assert.equal(hostname(), full);
  assert.equal(hostname("full"), full);
  assert.equal(hostname("short"), full.split(".")[0]);
  assert.ok(!hostname("short")!.includes("."));
});
