import assert from "node:assert/strict";
import { getJsonLinesFormatter, type LogRecord } from "@logtape/logtape";
import {
  flushLogging,
  logger,
  setupLogging,
  withReadableErrors,
} from "../../../src/log/logging.ts";

Deno.test("withReadableErrors() renders errors in JSON lines as name and message", () => {
  const error = new RangeError("lease is stale");
  const record: LogRecord = {
    category: ["keelson"],
    level: "error",
    message: ["Renew failed: ", error, ""],
    rawMessage: "Renew failed: {error}",
    timestamp: 0,
    properties: { error, lease: "kube-system/keelson" },
  };
  const line = JSON.parse(withReadableErrors(getJsonLinesFormatter())(record));
  assert.equal(line.properties.error, "RangeError: lease is stale");
  assert.equal(line.properties.lease, "kube-system/keelson");
  assert.match(line.message, /Renew failed: "?RangeError: lease is stale/);
});

Deno.test("a call below the configured level returns before its properties are read", async () => {
  await setupLogging({ level: "warning", format: "json" });
  try {
    let reads = 0;
    const properties = {
      get key() {
        reads++;
        return "k";
      },
    };
    const log = logger("test", "levels");
    log.trace("Finished {key}", properties);
    log.debug("Finished {key}", properties);
    log.info("Finished {key}", properties);
    assert.equal(reads, 0, "a skipped level read the properties");
  } finally {
    await flushLogging();
  }
});
