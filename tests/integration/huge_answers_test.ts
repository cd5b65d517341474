/**
 * Keelson as it ships, against an API server that answers every list with a 1 GiB page: `keelson
 * plan --kubeconfig`, `keelson status` and `keelson import metallb --kubeconfig` exit 1 with a
 * message naming the list and the bound, and `keelson run` keeps running, its informers saying why
 * and backing off; none of them goes past 200 MB of peak RSS. The server is a loopback HTTPS
 * (HTTP/2) server in this process that generates the page as it is read (nothing is stored), and
 * counts what it sent. The commands run as the unprivileged test user, as shipped
 * (`_harness/shipped_keelson.ts`). Peak RSS is VmHWM from /proc, read until the process ends.
 *
 * Also here: a 403 whose Status message holds a newline prints no forged line.
 *
 * Figures (peak RSS, bytes the server sent) are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import { processMemory } from "../bench/_process_stats.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { startKeelson } from "./_harness/keelson_process.ts";
import { figure, lbInventory } from "./_harness/lb_services.ts";
import { writePki } from "./_harness/pki.ts";
import { agentPidUnder, keelsonCommand, readableByTestUser } from "./_harness/shipped_keelson.ts";
import { pollUntil } from "../_support/poll.ts";

const GIB = 1024 * 1024 * 1024;
/** The bound the issue sets for every command's peak RSS. */
const PEAK_RSS_BOUND_MB = 200;

/** What the fake API server answers to a list. */
type ListAnswer = "huge" | "forbidden-with-newline";

/** A 64 KiB run of plausible Node items, repeated to make the page. */
function itemChunk(): Uint8Array {
  const item = JSON.stringify({
    metadata: { name: "node-0000", labels: { "topology.kubernetes.io/zone": "z1" } },
    status: { images: [{ names: ["registry.example/app@sha256:" + "0".repeat(64)] }] },
  }) + ",";
  return new TextEncoder().encode(item.repeat(Math.ceil(65536 / item.length)));
}

/** A list page of `bytes` bytes, generated while it is read; `sent` counts what went out. */
function hugeListBody(kind: string, bytes: number, sent: { bytes: number }): ReadableStream {
  const encoder = new TextEncoder();
  const chunk = itemChunk();
  let state: "head" | "items" | "done" = "head";
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state === "head") {
        state = "items";
        const head = encoder.encode(
          `{"kind":"${kind}","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[`,
        );
        sent.bytes += head.byteLength;
        return controller.enqueue(head);
      }
      if (state === "items" && sent.bytes < bytes) {
        sent.bytes += chunk.byteLength;
        return controller.enqueue(chunk);
      }
      state = "done";
      controller.enqueue(encoder.encode('{"metadata":{"name":"last"}}]}'));
      controller.close();
    },
  }, { highWaterMark: 0 });
}

/** The loopback API server: every list answered as `answer` says, the rest 404. */
async function startFakeApiServer(dir: string, answer: () => ListAnswer) {
  const pki = await writePki(dir);
  const sent = { bytes: 0 };
  const lists: string[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(pki.servingCert),
    key: await Deno.readTextFile(pki.servingKey),
    onListen() {},
  }, (request) => {
    const url = new URL(request.url);
    if (url.pathname === "/version") {
      return Response.json({ major: "1", minor: "31", gitVersion: "v1.31.0" });
    }
    if (request.method === "GET" && url.searchParams.has("limit")) {
      lists.push(`${url.pathname}?limit=${url.searchParams.get("limit")}`);
      if (answer() === "forbidden-with-newline") {
        return Response.json({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "Forbidden",
          code: 403,
          message: "nodes is forbidden\nkeelson plan: FORGED LINE",
        }, { status: 403 });
      }
      const resource = url.pathname.split("/").pop() ?? "";
      const kind = `${resource[0]?.toUpperCase()}${resource.slice(1, -1)}List`;
      return new Response(hugeListBody(kind, GIB, sent), {
        headers: { "content-type": "application/json" },
      });
    }
    return Response.json({ kind: "Status", code: 404, reason: "NotFound" }, { status: 404 });
  });
  const kubeconfig = `${dir}/fake.kubeconfig`;
  await writeKubeconfig(kubeconfig, `https://127.0.0.1:${server.addr.port}`, pki.caPem, "x", {
    token: "t0k",
  });
  return {
    kubeconfig,
    sent,
    lists,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  peakMb: number;
}

/** Runs a Keelson command as shipped, reading its peak RSS until it ends. */
async function keelson(args: string[]): Promise<Outcome> {
  const [command, ...argv] = await keelsonCommand(args, { unprivileged: true });
  const child = new Deno.Command(command!, {
    args: argv,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  let peakMb = 0;
  let ended = false;
  let agent: number | undefined;
  const output = child.output().finally(() => ended = true);
  // VmHWM only grows: the last read before the end holds the peak. The process started is the
  // service manager; Keelson is its child running as the test user.
  await pollUntil("the command ends", async () => {
    try {
      agent ??= await agentPidUnder(child.pid);
      // a process that has ended (a zombie) has no VmHWM line: NaN, not a figure
      const read = agent === undefined ? NaN : (await processMemory(agent)).peakMb;
      if (Number.isFinite(read)) peakMb = Math.max(peakMb, read);
    } catch {
      // the process is gone: the reads before hold the peak
    }
    return ended;
  }, { timeoutMs: 300_000, intervalMs: 10 });
  const out = await output;
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr), peakMb };
}

const METALLB = `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata:
  name: lan
  namespace: metallb-system
spec:
  addresses: ["192.0.2.0/28"]
`;

Deno.test({
  name:
    "a 1 GiB list page: plan --kubeconfig, status and import --kubeconfig exit 1 naming the bound, within 200 MB; run keeps running and backs off",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "keelson-huge-answers-" });
    try {
      await using api = await startFakeApiServer(dir, () => "huge");
      const config = `${dir}/keelson.toml`;
      await Deno.writeTextFile(
        config,
        lbInventory({ pools: [{ name: "lan", addresses: ["192.0.2.0/28"] }] }),
      );
      const metallb = `${dir}/metallb.yaml`;
      await Deno.writeTextFile(metallb, METALLB);
      await readableByTestUser(api.kubeconfig, config, metallb);

      const commands: Array<{ name: string; args: string[]; list: string }> = [
        {
          name: "plan --kubeconfig",
          args: ["plan", "--config", config, "--current", "none", "--kubeconfig", api.kubeconfig],
          list: "/api/v1/nodes",
        },
        {
          name: "status",
          args: ["status", "--kubeconfig", api.kubeconfig, "--observe", "0s"],
          list: "/api/v1/services|/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        },
        {
          name: "import metallb --kubeconfig",
          args: ["import", "metallb", "--from", metallb, "--kubeconfig", api.kubeconfig],
          list: "/api/v1/nodes",
        },
      ];
      for (const command of commands) {
        api.sent.bytes = 0;
        const outcome = await keelson(command.args);
        figure(
          `keelson ${command.name} against a 1 GiB list page: exit ${outcome.code}, peak RSS ` +
            `${outcome.peakMb.toFixed(1)} MB, the server sent ` +
            `${(api.sent.bytes / 1024 / 1024).toFixed(1)} MiB`,
        );
        assert.equal(outcome.code, 1, `${command.name}: ${outcome.stderr}`);
        assert.match(
          outcome.stderr,
          new RegExp(
            `Cannot list (${command.list}): the API server's answer is larger than 8 MiB, ` +
              "the most Keelson reads of one list page; it stopped reading",
          ),
          command.name,
        );
        assert.ok(outcome.peakMb > 0, `${command.name}: no RSS was read`);
        assert.ok(
          outcome.peakMb < PEAK_RSS_BOUND_MB,
          `${command.name}: peak RSS ${outcome.peakMb.toFixed(1)} MB`,
        );
        assert.ok(api.sent.bytes < GIB / 4, `${command.name}: the server sent ${api.sent.bytes}`);
      }

      // run: the informers fail, say why, back off and try again; the process stays up
      api.lists.length = 0;
      const agent = await startKeelson({
        configPath: config,
        kubeconfig: api.kubeconfig,
        host: "cp-1",
        dir,
        unprivileged: true,
      });
      try {
        const failures = async () =>
          ((await agent.log()).match(
            /Watch of \/api\/v1\/nodes failed, retrying in \d+ ms: Cannot list \/api\/v1\/nodes: the API server's answer is larger than 8 MiB/g,
          ) ?? []).length;
        // each failure after the first followed a back-off (1 s, 2 s, ... with jitter) and a retry
        await pollUntil("the Node informer failed three times", async () => await failures() >= 3, {
          timeoutMs: 120_000,
          intervalMs: 500,
        });
        // the agent under the service manager (whose own pid is a Deno process of its own)
        const manager = agent.process.pid;
        const pid = manager === undefined ? undefined : await agentPidUnder(manager);
        assert.ok(pid !== undefined, `keelson run ended: ${await agent.log()}`);
        const memory = await processMemory(pid);
        const nodeLists = api.lists.filter((l) => l.startsWith("/api/v1/nodes?")).length;
        figure(
          `keelson run against 1 GiB list pages: peak RSS ${memory.peakMb.toFixed(1)} MB after ` +
            `${api.lists.length} list requests (${nodeLists} of Nodes, ` +
            `${await failures()} reported failures of the Node informer)`,
        );
        assert.ok(
          memory.peakMb < PEAK_RSS_BOUND_MB,
          `run: peak RSS ${memory.peakMb.toFixed(1)} MB`,
        );
      } finally {
        await agent.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "a 403 whose Status message holds a newline prints one line, the newline escaped",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "keelson-forged-line-" });
    try {
      await using api = await startFakeApiServer(dir, () => "forbidden-with-newline");
      const config = `${dir}/keelson.toml`;
      await Deno.writeTextFile(
        config,
        lbInventory({ pools: [{ name: "lan", addresses: ["192.0.2.0/28"] }] }),
      );
      await readableByTestUser(api.kubeconfig, config);
      const outcome = await keelson([
        "plan",
        "--config",
        config,
        "--current",
        "none",
        "--kubeconfig",
        api.kubeconfig,
      ]);
      assert.equal(outcome.code, 1, outcome.stderr);
      const lines = outcome.stderr.trimEnd().split("\n");
      assert.ok(
        lines.every((line) => !line.startsWith("keelson plan: FORGED LINE")),
        outcome.stderr,
      );
      assert.match(outcome.stderr, /nodes is forbidden\\nkeelson plan: FORGED LINE \(HTTP 403\)/);
      // the same command answered at once: its peak is the baseline of the figures above
      figure(
        `keelson plan --kubeconfig answered with a small 403: peak RSS ${
          outcome.peakMb.toFixed(1)
        } MB`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
