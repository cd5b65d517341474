import assert from "node:assert/strict";
import { isAbortError, SERVER_TEXT_MAX, statusError } from "../../../src/kube/api_error.ts";
import { isConflict, isNotFound, KubeApiError } from "../../../src/kube/ports.ts";

const CONFLICT_BODY = JSON.stringify({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  message: 'Operation cannot be fulfilled on nodes "node-b": the object has been modified',
  reason: "Conflict",
  details: { name: "node-b", kind: "nodes" },
  code: 409,
});

Deno.test("statusError() maps a Status body to code, reason and message", () => {
  const error = statusError(409, CONFLICT_BODY, null, 'replace node "node-b"');
  assert.ok(error instanceof KubeApiError);
  assert.equal(error.code, 409);
  assert.equal(error.reason, "Conflict");
  assert.equal(
    error.message,
    'Cannot replace node "node-b": Operation cannot be fulfilled on nodes "node-b": the object has been modified (HTTP 409)',
  );
  assert.equal(isConflict(error), true);
});

Deno.test("statusError() reads Retry-After seconds from the header value", () => {
  const error = statusError(
    429,
    '{"kind":"Status","reason":"TooManyRequests","message":"slow down"}',
    "7",
    "list nodes",
  );
  assert.equal(error.code, 429);
  assert.equal(error.retryAfterSeconds, 7);
});

Deno.test("statusError() maps a 401 without a body to reason Unauthorized", () => {
  const error = statusError(401, "", null, "list nodes");
  assert.equal(error.code, 401);
  assert.equal(error.reason, "Unauthorized");
  assert.equal(error.message, "Cannot list nodes: Unauthorized (HTTP 401)");
});

Deno.test("statusError() maps a 404 so isNotFound() is true", () => {
  const body =
    '{"kind":"Status","reason":"NotFound","message":"nodes \\"x\\" not found","code":404}';
  const error = statusError(404, body, null, 'read node "x"');
  assert.equal(isNotFound(error), true);
});

Deno.test("isAbortError() tells an abort or timeout from a failure", () => {
  assert.equal(isAbortError(new DOMException("aborted", "AbortError")), true);
  assert.equal(isAbortError(new DOMException("late", "TimeoutError")), true);
  assert.equal(isAbortError(new TypeError("error sending request")), false);
});

Deno.test("statusError() takes retryAfterSeconds from Status details when no header is given", () => {
  const body =
    '{"kind":"Status","reason":"ServerTimeout","details":{"retryAfterSeconds":3},"code":504}';
  const error = statusError(504, body, null, "watch /api/v1/nodes");
  assert.equal(error.retryAfterSeconds, 3);
  assert.equal(error.reason, "ServerTimeout");
});

Deno.test("statusError() maps a 410 Expired watch error", () => {
  const body =
    '{"kind":"Status","reason":"Expired","message":"too old resource version: 1 (5)","code":410}';
  const error = statusError(410, body, undefined, "watch /api/v1/nodes");
  assert.equal(error.code, 410);
  assert.equal(error.reason, "Expired");
  assert.match(error.message, /too old resource version/);
});

Deno.test("statusError() makes a server's message one escaped line: a newline cannot forge a line", () => {
  const error = statusError(
    403,
    JSON.stringify({
      kind: "Status",
      reason: "Forbidden",
      message: "denied\nkeelson plan: FORGED LINE\r\x1b[2J",
    }),
    null,
    "list /api/v1/nodes",
  );
  assert.equal(error.message.includes("\n"), false);
  assert.equal(error.message.includes("\x1b"), false);
  assert.equal(
    error.message,
    "Cannot list /api/v1/nodes: denied\\nkeelson plan: FORGED LINE\\r\\x1b[2J (HTTP 403)",
  );
});

Deno.test("statusError() cuts a 1 MiB message to SERVER_TEXT_MAX characters and says how much was cut", () => {
  const message = "m".repeat(1024 * 1024);
  const error = statusError(500, JSON.stringify({ kind: "Status", message }), null, "get x");
  assert.ok(error.message.length < SERVER_TEXT_MAX + 100, `${error.message.length} characters`);
  assert.match(
    error.message,
    new RegExp(`… \\(${1024 * 1024 - SERVER_TEXT_MAX} more characters\\)`),
  );
});

Deno.test("statusError() takes no reason, code or retry delay from the server that is not one", () => {
  const error = statusError(
    429,
    JSON.stringify({
      kind: "Status",
      reason: "Too\nMany",
      details: { retryAfterSeconds: "soon" },
    }),
    null,
    "get x",
  );
  assert.equal(error.reason, "TooManyRequests");
  assert.equal(error.retryAfterSeconds, undefined);
});
