import assert from "node:assert/strict";
import {
  ACCESS_DENIED_REPLY,
  READ_ONLY_BIRD_COMMANDS,
  serveReadOnlyBird,
} from "../../../../../providers/baremetal/bird/read_only_relay.ts";
import {
  birdCommand,
  BirdSocketError,
  parseProtocols,
} from "../../../../../providers/baremetal/bird/control_socket.ts";
import { fakeBird } from "./_fake_bird.ts";
import { holdsFor } from "../../../../_support/poll.ts";

const PROTOCOLS = [
  "2002-Name       Proto      Table      State  Since         Info",
  "1002-keelson_peer_tor BGP        ---        up     2026-01-01 10:00:00  Established",
  "1006-  BGP state:          Established",
  "         Routes:         0 imported, 2 exported, 0 preferred",
  "0000 ",
  "",
].join("\n");

/** A relay in front of a fake BIRD, in a directory of this process's user. */
async function relayLab(options: { maxReplyBytes?: number; timeoutMs?: number } = {}) {
  const dir = await Deno.makeTempDir();
  const birdDir = `${dir}/bird`;
  const daemons = `${dir}/daemons`;
  await Deno.mkdir(birdDir);
  await Deno.mkdir(daemons, { mode: 0o750 });
  const replies: Record<string, string> = {
    "show protocols all": PROTOCOLS,
    "configure": "0002-Reading configuration\n0003 Reconfigured\n",
  };
  const fake = fakeBird(birdDir, replies);
  let closed = false;
  const bird = {
    path: fake.path,
    // what BIRD was sent (the fake records "" for a connection that sent nothing)
    get commands() {
      return fake.commands.filter((c) => c !== "");
    },
    close: async () => {
      if (!closed) await fake.close();
      closed = true;
    },
  };
  const stop = new AbortController();
  const listenPath = `${daemons}/bird-ro.ctl`;
  let listening: () => void = () => {};
  const ready = new Promise<void>((resolve) => listening = resolve);
  const served = serveReadOnlyBird({
    listenPath,
    birdSocket: bird.path,
    signal: stop.signal,
    directoryOwner: Deno.uid() ?? 0,
    retryMs: 20,
    onListening: () => listening(),
    ...options,
  });
  await ready;
  return {
    bird,
    replies,
    listenPath,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await served;
      await bird.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * Sends raw bytes and returns everything the relay answered, up to its close (a close with the
 * client's bytes unread is a reset, after the data).
 */
async function raw(path: string, request: string): Promise<string> {
  const conn = await Deno.connect({ transport: "unix", path });
  try {
    await conn.write(new TextEncoder().encode(request));
    let text = "";
    const buffer = new Uint8Array(65536);
    while (true) {
      const n = await conn.read(buffer).catch((error) => {
        if (error instanceof Deno.errors.ConnectionReset) return null;
        throw error;
      });
      if (n === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } finally {
    conn.close();
  }
}

Deno.test("the read-only socket answers show protocols all as BIRD's socket does", async () => {
  await using lab = await relayLab();
  assert.deepEqual(READ_ONLY_BIRD_COMMANDS, ["show protocols all"]);
  const reply = await birdCommand(lab.listenPath, "show protocols all", 5000);
  const direct = await birdCommand(lab.bird.path, "show protocols all", 5000);
  assert.deepEqual(reply, direct);
  assert.deepEqual(parseProtocols(reply).map((p) => [p.name, p.established, p.exported]), [
    ["keelson_peer_tor", true, 2],
  ]);
  assert.equal((await Deno.stat(lab.listenPath)).mode! & 0o777, 0o660);
});

Deno.test("the read-only socket refuses every other command, and BIRD never sees it", async () => {
  await using lab = await relayLab();
  const before = lab.bird.commands.length;
  for (
    const command of [
      "configure",
      'configure "/etc/shadow"',
      "configure soft",
      "disable keelson_peer_tor",
      "restart all",
      "down",
      "show protocols all extra",
      "SHOW PROTOCOLS ALL",
      " show protocols all",
      "show protocols all;configure",
    ]
  ) {
    const reply = await birdCommand(lab.listenPath, command, 5000);
    assert.equal(reply.code, 8007, command);
    assert.match(reply.lines.at(-1)!.text, /read-only/, command);
  }
  assert.equal(lab.bird.commands.length, before, "no command reached BIRD");

  // a second line after an allowed one is never read; nor is an over-long or unfinished line
  const pipelined = await raw(lab.listenPath, "show protocols all\nconfigure\n");
  assert.match(pipelined, /keelson_peer_tor/);
  assert.deepEqual(lab.bird.commands.slice(before), ["show protocols all"]);
  assert.match(await raw(lab.listenPath, "x".repeat(300) + "\n"), /8007 Access denied/);
  assert.equal(lab.bird.commands.length, before + 1);
  assert.ok(ACCESS_DENIED_REPLY.startsWith("8007 "));
});

Deno.test("the read-only socket bounds BIRD's reply and each connection's time", async () => {
  {
    await using lab = await relayLab({ maxReplyBytes: 1024 });
    lab.replies["show protocols all"] = "1002-" + "x".repeat(4000) + "\n0000 \n";
    await assert.rejects(
      () => birdCommand(lab.listenPath, "show protocols all", 5000),
      BirdSocketError,
    );
  }
  {
    await using lab = await relayLab({ timeoutMs: 200 });
    // a client that connects and never sends its command is cut at the deadline
    const conn = await Deno.connect({ transport: "unix", path: lab.listenPath });
    const start = performance.now();
    const buffer = new Uint8Array(4096);
    let text = "";
    while (true) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    conn.close();
    assert.match(text, /^0001 BIRD/, "BIRD's greeting is passed on");
    assert.ok(performance.now() - start < 4000, "closed at the deadline, not the client's");
  }
});

Deno.test("the read-only socket closes without a greeting while BIRD is down", async () => {
  await using lab = await relayLab();
  await lab.bird.close();
  await assert.rejects(
    () => birdCommand(lab.listenPath, "show protocols all", 2000),
    (error) => error instanceof BirdSocketError && /closed/.test(error.message),
  );
});

Deno.test("the read-only socket is not served from a directory others may write", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.chmod(dir, 0o777);
    const stop = new AbortController();
    let listened = false;
    const served = serveReadOnlyBird({
      listenPath: `${dir}/bird-ro.ctl`,
      birdSocket: `${dir}/bird.ctl`,
      signal: stop.signal,
      directoryOwner: Deno.uid() ?? 0,
      retryMs: 20,
      onListening: () => listened = true,
    });
    // the unsafe directory is refused: nothing listens for the window, however often it retries
    await holdsFor("no listening socket", () => !listened, { forMs: 200 });
    stop.abort();
    await served;
    assert.equal(listened, false);
    assert.equal(await Deno.lstat(`${dir}/bird-ro.ctl`).then(() => true, () => false), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
