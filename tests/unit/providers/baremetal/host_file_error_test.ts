import assert from "node:assert/strict";
import {
  HostFileError,
  writeProblem,
  writingHostFile,
} from "../../../../providers/baremetal/host_file_error.ts";

Deno.test("writeProblem() says what to do for a write outside the baked set and a denied one", () => {
  assert.equal(
    writeProblem(new Deno.errors.NotCapable('Requires write access to "/tmp/x"')),
    "the keelson binary may write only under /etc/keepalived/conf.d, /run/keelson, " +
      '/run/keelson-daemons, /etc/keelson/bird, /run/bird (docs/security.md "Permissions")',
  );
  assert.match(
    writeProblem(new Deno.errors.PermissionDenied("Permission denied (os error 13)")),
    /^permission denied: the directory must be writable by the user Keelson runs as \(uid \d+; docs\/install\.md\)$/,
  );
  assert.equal(
    writeProblem(new Deno.errors.NotFound("No such file or directory (os error 2): open '/x'")),
    "no such file or directory (os error 2)",
  );
});

Deno.test("writingHostFile() names the path and keeps the cause", async () => {
  const cause = new Deno.errors.NotCapable("no");
  const error = await writingHostFile("/tmp/k.conf", () => Promise.reject(cause)).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof HostFileError);
  assert.match(error.message, /^Cannot write \/tmp\/k\.conf: the keelson binary may write only/);
  assert.equal(error.cause, cause);
  assert.equal(await writingHostFile("/x", () => Promise.resolve(7)), 7);
});
