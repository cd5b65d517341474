import assert from "node:assert/strict";
import { ApiserverProbe } from "../../../../../providers/baremetal/control_plane/apiserver_probe.ts";
import { FakeClock } from "../../../_fakes/fake_clock.ts";
import { captureLogs } from "../../../_fakes/captured_logs.ts";
import { reset } from "@logtape/logtape";
import { holdsFor, pollUntil } from "../../../../_support/poll.ts";

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

Deno.test("ApiserverProbe.tick() survives a track file it cannot write: logs it once, keeps the state, writes at the next probe", async () => {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir();
  const blocker = `${dir}/blocker`;
  const file = `${blocker}/apiserver-health`;
  await Deno.writeTextFile(blocker, "a file where the directory should be");
  const probe = new ApiserverProbe({
    trackFile: file,
    rise: 1,
    check: () => Promise.resolve(true),
  });
  try {
    assert.equal(await probe.tick(), "unknown");
    assert.equal(await probe.tick(), "unknown");
    const errors = records.filter((r) => r.level === "error");
    assert.equal(errors.length, 1, "logged once while the reason holds");
    assert.match(
      String(errors[0]!.properties.error),
      new RegExp(`^Cannot write ${blocker}: `),
    );
    await Deno.remove(blocker);
    assert.equal(await probe.tick(), "healthy");
    assert.equal(await Deno.readTextFile(file), "0\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await reset();
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

Deno.test("ApiserverProbe.run() re-probes after recheckIntervalMs while a change is being confirmed", async () => {
  const dir = await Deno.makeTempDir();
  const clock = new FakeClock();
  const answers = [true, true, true, false, false, false];
  let calls = 0;
  const probe = new ApiserverProbe({
    trackFile: `${dir}/apiserver-health`,
    intervalMs: 1000,
    clock,
    check: () => Promise.resolve(answers[calls++] ?? false),
  });
  // the probe's work after a clock step is queued at once: polled for, and a window for "none"
  const probed = (n: number, state?: string) =>
    pollUntil(
      `probe ${n}${state ? ` (${state})` : ""}`,
      () => calls === n && (state === undefined || probe.state === state),
      { context: () => `calls ${calls}, state ${probe.state}` },
    );
  const noProbeAfter = (n: number) =>
    holdsFor(`no probe after the ${n}th`, () => calls === n, { forMs: 30 });
  const controller = new AbortController();
  const running = probe.run(controller.signal);
  try {
    await probed(1, "unknown"); // rising: re-check soon
    clock.advance(200);
    await probed(2, "healthy"); // settled: a whole interval
    clock.advance(999);
    await noProbeAfter(2);
    clock.advance(1);
    await probed(3);
    clock.advance(1000);
    await probed(4, "healthy"); // first failure: re-check soon
    clock.advance(200);
    await probed(5, "unhealthy");
    await pollUntil(
      "the track file saying 1",
      async () => await Deno.readTextFile(`${dir}/apiserver-health`).catch(() => "") === "1\n",
    );
    clock.advance(999);
    await noProbeAfter(5);
  } finally {
    controller.abort();
    await running;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ApiserverProbe.tick() says why the apiserver turned unhealthy (HTTP status, connection error, a check that throws)", async () => {
  const records = await captureLogs();
  const dir = await Deno.makeTempDir();
  let status = 200;
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ac.signal, onListen: () => {} },
    () => new Response("ok", { status }),
  );
  const url = `http://127.0.0.1:${server.addr.port}/readyz`;
  const reasons = () =>
    records.filter((r) => r.level === "warning").map((r) => String(r.properties.reason));
  try {
    const probe = new ApiserverProbe({ url, trackFile: `${dir}/h`, rise: 1, fall: 1 });
    assert.equal(await probe.tick(), "healthy");
    status = 503;
    assert.equal(await probe.tick(), "unhealthy");
    assert.deepEqual(reasons(), [`${url} answered HTTP 503`]);
    status = 200;
    assert.equal(await probe.tick(), "healthy");
    ac.abort();
    await server.finished;
    assert.equal(await probe.tick(), "unhealthy");
    assert.match(reasons()[1]!, new RegExp(`^${url.replaceAll(".", "\\.")}: .*refused`, "i"));

    // a request that cannot even be sent (e.g. a permission the runtime refuses) is a reason too
    const throwing = new ApiserverProbe({
      trackFile: `${dir}/t`,
      rise: 1,
      fall: 1,
      check: () => Promise.reject(new Error('Requires sys access to "ca"')),
    });
    assert.equal(await throwing.tick(), "unhealthy");
    assert.equal(reasons()[2], 'Requires sys access to "ca"');
  } finally {
    ac.abort();
    await Deno.remove(dir, { recursive: true });
    await reset();
  }
});
