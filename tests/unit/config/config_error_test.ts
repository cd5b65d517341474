import assert from "node:assert/strict";
import { ConfigError, formatIssue } from "../../../src/config/config_error.ts";

Deno.test("formatIssue() renders file, line, path and message", () => {
  assert.equal(
    formatIssue({
      file: "keelson.toml",
      line: 14,
      path: "pools[1].addresses[0]",
      message: '"10.0.0.300/24" is not an IP range',
    }),
    'keelson.toml:14: pools[1].addresses[0]: "10.0.0.300/24" is not an IP range',
  );
});

Deno.test("formatIssue() leaves out an unknown line and an empty path", () => {
  assert.equal(
    formatIssue({ file: "k.toml", path: "", message: "Cannot read the configuration file: x" }),
    "k.toml: Cannot read the configuration file: x",
  );
  assert.equal(formatIssue({ file: "k.toml", path: "a.b", message: "m" }), "k.toml: a.b: m");
});

Deno.test("ConfigError.format() gives one line per issue and the message counts them", () => {
  const error = new ConfigError([
    { file: "k.toml", line: 1, path: "a", message: "one" },
    { file: "k.toml", line: 2, path: "b", message: "two" },
  ]);
  assert.equal(error.name, "ConfigError");
  assert.equal(error.format(), "k.toml:1: a: one\nk.toml:2: b: two");
  assert.match(error.message, /^Cannot use configuration file "k\.toml": 2 problems\n/);
});
