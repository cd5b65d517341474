import assert from "node:assert/strict";
import { requiredFlag } from "../../../src/cli/read_env.ts";
import { UsageError } from "../../../src/cli/usage_error.ts";

const ENV = "KEELSON_TEST_REQUIRED_FLAG";

Deno.test("requiredFlag prefers the flag, falls back to the variable, refuses neither", () => {
  Deno.env.delete(ENV);
  try {
    assert.equal(requiredFlag("a.toml", "--config FILE", ENV), "a.toml");
    assert.throws(
      () => requiredFlag(undefined, "--config FILE", ENV),
      (e: unknown) =>
        e instanceof UsageError && e.message === `--config FILE is required (or set ${ENV})`,
    );
    Deno.env.set(ENV, "");
    assert.throws(() => requiredFlag(undefined, "--config FILE", ENV), UsageError);
    Deno.env.set(ENV, "b.toml");
    assert.equal(requiredFlag(undefined, "--config FILE", ENV), "b.toml");
    assert.equal(requiredFlag("a.toml", "--config FILE", ENV), "a.toml");
  } finally {
    Deno.env.delete(ENV);
  }
});
