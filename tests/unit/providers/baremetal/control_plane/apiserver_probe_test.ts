import assert from "node:assert/strict";
import { ApiserverProbe } from "../../../../../providers/baremetal/control_plane/apiserver_probe.ts";

Deno.test("ApiserverProbe.tick() changes state only after rise/fall and writes on change", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/sub/apiserver-health`;
  const answers = [true, false, true, true, true, false, false, false, true];
  let i = 0;
  const probe = new ApiserverProbe({
    trackFile: file,
    check: () => Promise.resolve(answers[i++]!),
  });
  const states: string[] = [];
  const contents: (string | undefined)[] = [];
  try {
    for (const _ of answers) {
      states.push(await probe.tick());
      contents.push(await Deno.readTextFile(file).catch(() => undefined));
    }
    assert.deepEqual(states, [
      "unknown",
      "unknown",
      "unknown",
      "healthy",
      "healthy",
      "healthy",
      "unhealthy",
      "unhealthy",
      "unhealthy",
    ]);
    assert.deepEqual(contents, [
      undefined,
      undefined,
      undefined,
      "0\n",
      "0\n",
      "0\n",
      "1\n",
      "1\n",
      "1\n",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ApiserverProbe.tick() does not rewrite the file while the state holds", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/apiserver-health`;
  const probe = new ApiserverProbe({
    trackFile: file,
    rise: 1,
    check: () => Promise.resolve(true),
  });
  try {
    await probe.tick();
    const first = (await Deno.stat(file)).mtime;
    await Deno.writeTextFile(file, "sentinel"); // a rewrite would replace this
    await probe.tick();
    assert.equal(await Deno.readTextFile(file), "sentinel");
    assert.ok(first);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ApiserverProbe.tick() treats HTTP 200 as healthy and 500 or no server as not", async () => {
  const dir = await Deno.makeTempDir();
  let status = 200;
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    () => new Response("ok", { status }),
  );
  const url = `http://127.0.0.1:${server.addr.port}/readyz`;
  try {
    const probe = new ApiserverProbe({ url, trackFile: `${dir}/h`, rise: 1, fall: 1 });
    assert.equal(await probe.tick(), "healthy");
    status = 500;
    assert.equal(await probe.tick(), "unhealthy");
    status = 200;
    assert.equal(await probe.tick(), "healthy");
    ac.abort();
    await server.finished;
    assert.equal(await probe.tick(), "unhealthy");
    assert.equal(await Deno.readTextFile(`${dir}/h`), "1\n");
  } finally {
    ac.abort();
    await Deno.remove(dir, { recursive: true });
  }
});
