import assert from "node:assert/strict";
import { asError, errorMessage, errorMessageWithCause } from "../../../src/log/error_message.ts";

Deno.test("errorMessage() gives an Error's message and anything else as a string", () => {
  const cases: [thrown: unknown, expected: string][] = [
    [new Error("boom"), "boom"],
    [new RangeError("out of range"), "out of range"],
    [new DOMException("stopped", "AbortError"), "stopped"],
    ["plain text", "plain text"],
    [42, "42"],
    [undefined, "undefined"],
    [{ toString: () => "custom" }, "custom"],
  ];
  for (const [thrown, expected] of cases) assert.equal(errorMessage(thrown), expected);
});

Deno.test("asError() keeps an Error and wraps anything else", () => {
  const error = new TypeError("t");
  assert.equal(asError(error), error);
  const wrapped = asError("plain");
  assert.ok(wrapped instanceof Error);
  assert.equal(wrapped.message, "plain");
});

Deno.test("errorMessageWithCause() appends the cause's message when the cause is an Error", () => {
  assert.equal(
    errorMessageWithCause(new Error("Cannot GET /x", { cause: new Error("connection refused") })),
    "Cannot GET /x: connection refused",
  );
  assert.equal(errorMessageWithCause(new Error("plain", { cause: "text" })), "plain");
  assert.equal(errorMessageWithCause(7), "7");
});
