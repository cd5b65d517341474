/**
 * Benchmark: what the apiserver takes for a Node's initialization write, as a PUT of the whole
 * Node (what Keelson and upstream's node controller send) and as the equivalent JSON merge patch
 * (labels, providerID, the taint list without the uninitialized taint, the read resourceVersion as
 * precondition). One request every 300 ms, alternating, so both meet an apiserver that has been
 * idle as long as in the idle-Node row of `deno task bench peers`. The client is a plain
 * `fetch` over HTTP/1.1 with no production code in the path: the figures compare the two requests,
 * not clients.
 *
 * Figures only: nothing is asserted. Run: `deno run -A tests/bench/node_write_bench.ts [N]`
 * (N Nodes, default 80, half of them each way).
 *
 * @module
 */
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import { startControlPlane } from "../integration/_harness/control_plane.ts";
import { registerNode, UNINITIALIZED_TAINT } from "../integration/_harness/kubelet.ts";
import { duration, say, sleep, summarize } from "./_report.ts";

const LABELS: Record<string, string> = {
  "node.kubernetes.io/instance-type": "m1",
  "beta.kubernetes.io/instance-type": "m1",
  "topology.kubernetes.io/zone": "z1",
  "failure-domain.beta.kubernetes.io/zone": "z1",
  "topology.kubernetes.io/region": "r1",
  "failure-domain.beta.kubernetes.io/region": "r1",
};

/**
 * Registers `n` Nodes one by one and initializes each 300 ms later, by PUT or merge patch in turn.
 * @param n how many Nodes
 * @returns exit code
 */
export async function runNodeWriteBench(n: number): Promise<number> {
  await using cp = await startControlPlane();
  const client = Deno.createHttpClient({ caCerts: [cp.caPem], http2: false });
  const send = async (method: string, path: string, body: unknown, type: string) => {
    const started = performance.now();
    const response = await fetch(new URL(path, cp.server), {
      method,
      client,
      headers: {
        authorization: `Bearer ${cp.adminToken}`,
        accept: "application/json",
        "content-type": type,
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const ms = performance.now() - started;
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return ms;
  };
  const put: number[] = [];
  const patch: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const name = `write-${i}`;
      const node = await registerNode(cp, name, {
        providedNodeIp: `10.0.${i >> 8}.${i & 255}`,
      });
      await sleep(300);
      const taints = (node.spec?.taints ?? []).filter((t: V1Taint) =>
        t.key !== UNINITIALIZED_TAINT
      );
      const providerID = `keelson://${name}`;
      if (i % 2 === 0) {
        const next: V1Node = {
          ...node,
          metadata: { ...node.metadata, labels: { ...node.metadata?.labels, ...LABELS } },
          spec: { ...node.spec, providerID, taints },
        };
        delete next.metadata!.managedFields;
        put.push(await send("PUT", `/api/v1/nodes/${name}`, next, "application/json"));
      } else {
        const body = {
          metadata: { resourceVersion: node.metadata?.resourceVersion, labels: LABELS },
          spec: { providerID, taints },
        };
        patch.push(
          await send("PATCH", `/api/v1/nodes/${name}`, body, "application/merge-patch+json"),
        );
      }
    }
  } finally {
    client.close();
  }
  for (const [what, samples] of [["PUT of the Node", put], ["JSON merge patch", patch]] as const) {
    const s = summarize(samples);
    say(
      `${what.padEnd(18)} n=${s.count}  p50 ${duration(s.p50)}  p99 ${duration(s.p99)}  ` +
        `mean ${duration(s.mean)}`,
    );
  }
  return 0;
}

if (import.meta.main) Deno.exit(await runNodeWriteBench(Number(Deno.args[0] ?? 80)));
