import assert from "node:assert/strict";
import { ApiException } from "@kubernetes/client-node";
import { isAbortError, statusError, toKubeApiError } from "../../../src/kube/api_error.ts";
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

Deno.test("toKubeApiError() maps an ApiException with a Status body string to code, reason and message", () => {
  const error = toKubeApiError(
    new ApiException(409, "HTTP-Code: 409", CONFLICT_BODY, { "content-type": "application/json" }),
    'replace node "node-b"',
  );
  assert.ok(error instanceof KubeApiError);
  assert.equal(error.code, 409);
  assert.equal(error.reason, "Conflict");
  assert.equal(
    error.message,
    'Cannot replace node "node-b": Operation cannot be fulfilled on nodes "node-b": the object has been modified (HTTP 409)',
  );
  assert.equal(isConflict(error), true);
});

Deno.test("toKubeApiError() reads Retry-After seconds from the headers", () => {
  const error = toKubeApiError(
    new ApiException(
      429,
      "x",
      '{"kind":"Status","reason":"TooManyRequests","message":"slow down"}',
      {
        "Retry-After": "7",
      },
    ),
    "list nodes",
  ) as KubeApiError;
  assert.equal(error.code, 429);
  assert.equal(error.retryAfterSeconds, 7);
});

Deno.test("toKubeApiError() maps a 401 without a body to reason Unauthorized", () => {
  const error = toKubeApiError(
    new ApiException(401, "x", undefined, {}),
    "list nodes",
  ) as KubeApiError;
  assert.equal(error.code, 401);
  assert.equal(error.reason, "Unauthorized");
  assert.equal(error.message, "Cannot list nodes: Unauthorized (HTTP 401)");
});

Deno.test("toKubeApiError() maps a 404 so isNotFound() is true", () => {
  const body =
    '{"kind":"Status","reason":"NotFound","message":"nodes \\"x\\" not found","code":404}';
  const error = toKubeApiError(new ApiException(404, "x", body, {}), 'read node "x"');
  assert.equal(isNotFound(error), true);
});

Deno.test("toKubeApiError() maps a network error to code 0 with the cause's message", () => {
  const cause = new Error("Connection refused (os error 111)");
  const error = toKubeApiError(new TypeError("error sending request", { cause }), "list nodes");
  assert.ok(error instanceof KubeApiError);
  assert.equal(error.code, 0);
  assert.match(error.message, /Connection refused/);
});

Deno.test("toKubeApiError() passes an abort through unchanged", () => {
  const abort = new DOMException("aborted", "AbortError");
  assert.equal(toKubeApiError(abort, "list nodes"), abort);
  assert.equal(isAbortError(abort), true);
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
