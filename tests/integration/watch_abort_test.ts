/**
 * A watch that carried tens of thousands of events ends at once when it is aborted, on a real
 * kube-apiserver.
 *
 * Before the fix it did not: Deno's fetch follows the caller's AbortSignal only through a WeakRef,
 * so once a garbage collection had freed fetch's internal signal (after some thousands of events)
 * an abort no longer reached the response body, and the watch waited for the next byte from the
 * server (`src/kube/abortable_body.ts`). The churn comes from a separate process, as from another
 * client of the cluster.
 *
 * Figures are printed with a `FIGURE` prefix; the assertion bound is generous (a loaded machine).
 */
import assert from "node:assert/strict";
import { createKubeClient } from "../../src/kube/kube_client.ts";
import { resolveConnectionSettings } from "../../src/kube/kubeconfig.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { churn } from "./_harness/churn.ts";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { figure } from "./_harness/lb_services.ts";
import { pollUntil, settlesWithin } from "../_support/poll.ts";

const NAMESPACE = "watch-abort";
const CONFIG_MAPS = 20;
const PATCHES = 30_000;

integrationTest("a watch that carried 30,000 events ends within 1 s of its abort", async () => {
  await using cp = await startControlPlane();
  await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
  for (let i = 0; i < CONFIG_MAPS; i++) {
    await cp.requestOk("POST", `/api/v1/namespaces/${NAMESPACE}/configmaps`, {
      metadata: { name: `cm-${i}` },
    });
  }
  const settings = await resolveConnectionSettings({ kubeconfig: cp.tokenKubeconfigPath });
  const client = createKubeClient(settings, { registry: createMetricsRegistry() });
  const stop = new AbortController();
  let events = 0;
  const watching = (async () => {
    for await (
      const _ of client.watch(`/api/v1/namespaces/${NAMESPACE}/configmaps`, {
        signal: stop.signal,
        allowWatchBookmarks: false,
      })
    ) {
      events++;
    }
  })();
  try {
    await new Promise((resolve) => setTimeout(resolve, 500)); // the watch is established
    const seconds = await churn({
      server: cp.server,
      token: cp.adminToken,
      caFile: `${cp.dir}/ca.crt`,
      collection: `/api/v1/namespaces/${NAMESPACE}/configmaps`,
      prefix: "cm",
      objects: CONFIG_MAPS,
      patches: PATCHES,
      concurrency: 8,
    });
    await pollUntil(`${PATCHES} events on the watch`, () => events >= PATCHES, {
      timeoutMs: 60_000,
      intervalMs: 50,
    }).catch(() => undefined); // the assertion below names what was seen
    figure(`the watch carried ${events} events (${PATCHES} patches in ${seconds.toFixed(1)} s)`);
    assert.ok(events >= PATCHES, `the watch saw ${events} of ${PATCHES} events`);

    const abortedAt = performance.now();
    stop.abort();
    const ended = await settlesWithin(watching, 10_000);
    const ms = performance.now() - abortedAt;
    figure(`the watch ended ${ended ? `${ms.toFixed(1)} ms` : "NOT within 10 s"} after its abort`);
    assert.ok(ended, "the watch ended after its abort");
    assert.ok(ms < 1_000, `the watch ended ${ms.toFixed(0)} ms after its abort (bound 1 s)`);
  } finally {
    stop.abort();
    client.close(); // also cuts a watch that did not end
    await settlesWithin(watching, 2_000);
  }
});
