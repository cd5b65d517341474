/**
 * Leader election against a real kube-apiserver: two electors (each with its own client) in one
 * process, upstream default durations (15 s / 10 s / 2 s, jitter 1.2).
 *
 * Figures are printed with a `FIGURE` prefix. The assertions are about behaviour: a released
 * Lease is taken over well before it could have expired (15 s), which proves the release worked.
 */
import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { createKubeClient, type KubeClient } from "../../src/kube/kube_client.ts";
import { resolveConnectionSettings } from "../../src/kube/kubeconfig.ts";
import { LEADER_ELECTION_DEFAULTS, LeaderElector } from "../../src/kube/leader_election.ts";
import { createLeaseApi } from "../../src/kube/lease_api.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { waitFor } from "./_harness/kubelet.ts";
import { holdsFor } from "../_support/poll.ts";

interface Candidate {
  client: KubeClient;
  elector: LeaderElector;
  controller: AbortController;
  leaderSignal?: AbortSignal;
  done: Promise<void>;
}

async function candidate(kubeconfig: string, identity: string): Promise<Candidate> {
  const settings = await resolveConnectionSettings({ kubeconfig });
  const registry = createMetricsRegistry();
  const client = createKubeClient(settings, { registry, userAgent: `keelson-test-${identity}` });
  const elector = new LeaderElector(createLeaseApi(client.rest), {
    namespace: "kube-system",
    name: "keelson-it",
    identity,
    registry,
    ...LEADER_ELECTION_DEFAULTS,
  });
  const controller = new AbortController();
  const result: Candidate = { client, elector, controller, done: Promise.resolve() };
  result.done = elector.run(controller.signal, {
    onStartedLeading(signal) {
      result.leaderSignal = signal;
    },
    onStoppedLeading() {},
  });
  return result;
}

// deno-lint-ignore no-console
const figure = (text: string) => console.error(`FIGURE ${text}`);

integrationTest(
  "LeaderElector elects exactly one of two candidates and hands over on release",
  async (t) => {
    await using cp = await startControlPlane();
    const began = performance.now();
    const a = await candidate(cp.tokenKubeconfigPath, "candidate-a");
    const b = await candidate(cp.tokenKubeconfigPath, "candidate-b");
    const all = [a, b];
    try {
      const leader = await waitFor(() => all.find((c) => c.elector.isLeader()), {
        timeoutMs: 20_000,
        message: "a leader",
      });
      figure(`first leader after ${(performance.now() - began).toFixed(0)} ms`);
      const standby = leader === a ? b : a;

      await t.step("exactly one leads and the Lease names it", async () => {
        // a few renewal rounds pass; the standby stays a standby all along
        await holdsFor("one leader", () => all.filter((c) => c.elector.isLeader()).length === 1, {
          forMs: 5_000,
        });
        const lease = await cp.requestOk<V1Lease>(
          "GET",
          "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson-it",
        );
        assert.equal(lease.spec?.holderIdentity, leader.elector.identity);
        assert.equal(lease.spec?.leaseDurationSeconds, 15);
        assert.match(String(lease.spec?.renewTime), /\.\d{6}Z$/);
        assert.equal(standby.elector.observedLeader(), leader.elector.identity);
      });

      await t.step("the leader survives a short apiserver restart", async () => {
        const stopped = performance.now();
        await cp.stopApiserver();
        await cp.startApiserver();
        figure(`apiserver down for ${(performance.now() - stopped).toFixed(0)} ms`);
        const restartedAt = Date.now();
        await waitFor(() => (leader.elector.lastRenewMs() ?? 0) >= restartedAt, {
          timeoutMs: 15_000,
          message: "a renewal after the restart",
        });
        assert.equal(leader.leaderSignal?.aborted, false);
        assert.equal(leader.elector.isLeader(), true);
        assert.equal(standby.elector.isLeader(), false);
      });

      await t.step("aborting the leader releases the Lease to the standby", async () => {
        const aborted = performance.now();
        leader.controller.abort();
        await leader.done;
        const released = performance.now();
        assert.equal(leader.leaderSignal?.aborted, true);
        await waitFor(() => standby.elector.isLeader(), {
          timeoutMs: 14_000,
          intervalMs: 20,
          message: "the standby to lead (before the 15 s lease could expire)",
        });
        figure(
          `release took ${(released - aborted).toFixed(0)} ms; standby led ` +
            `${(performance.now() - aborted).toFixed(0)} ms after the abort ` +
            "(retry period 2000 ms, jitter up to 2400 ms)",
        );
        const lease = await cp.requestOk<V1Lease>(
          "GET",
          "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson-it",
        );
        assert.equal(lease.spec?.holderIdentity, standby.elector.identity);
        assert.equal(lease.spec?.leaseTransitions, 1);
      });
    } finally {
      for (const c of all) c.controller.abort();
      await Promise.all(all.map((c) => c.done));
      for (const c of all) c.client.close();
    }
  },
);
