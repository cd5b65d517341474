/**
 * The service (LoadBalancer) controller of `keelson run` against a real kube-apiserver with a
 * dual-stack service CIDR: allocation, each requested-address source, pool choice, refused
 * requests (Warning, pending), sharing, dual-stack families, class filtering and the finalizer
 * lifecycle; then a second agent with `default_class = false`.
 *
 * Figures are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import type { KeelsonProcess } from "./_harness/keelson_process.ts";
import {
  CLEANUP_FINALIZER,
  createLbService,
  createNamespace,
  eventsOf,
  figure,
  getService,
  ingressIps,
  inV4Range,
  lbInventory,
  POOL_ANNOTATION,
  startLeadingAgent,
  type TestPool,
  waitEvent,
  waitIngress,
  waitRefused,
} from "./_harness/lb_services.ts";
import { waitFor } from "./_harness/wait.ts";

/** Pools are tried by name: "lan" (IPv4) before "vlan-ds" (both families); "dmz" is opt-in. */
const POOLS: TestPool[] = [
  { name: "dmz", addresses: ["198.51.100.0/29"], autoAssign: false },
  { name: "lan", addresses: ["192.0.2.0/28"], reserved: ["192.0.2.14"] },
  { name: "vlan-ds", addresses: ["203.0.113.0/29", "2001:db8:1::10-2001:db8:1::1f"] },
];

const LAN = ["192.0.2.1", "192.0.2.13"] as const;
const DMZ = ["198.51.100.1", "198.51.100.6"] as const;
const DS_V4 = ["203.0.113.1", "203.0.113.6"] as const;
const DS_V6_REGEXP = /^2001:db8:1::1[0-9a-f]$/;

const seconds = (ms: number) => (ms / 1000).toFixed(2);

function hasFinalizer(service: V1Service | undefined): boolean {
  return service?.metadata?.finalizers?.includes(CLEANUP_FINALIZER) ?? false;
}

integrationTest(
  "ServiceController in keelson run allocates, honours requests, refuses conflicts and releases on a real apiserver",
  async (t) => {
    await using cp = await startControlPlane({
      // dual-stack Services need a dual-stack service CIDR; the last flag wins
      apiserverArgs: ["--service-cluster-ip-range=10.0.0.0/24,fd00:10::/108"],
    });
    const dir = await Deno.makeTempDir({ prefix: "keelson-services-" });
    const configPath = `${dir}/keelson.toml`;
    await Deno.writeTextFile(configPath, lbInventory({ pools: POOLS }));
    const agents: KeelsonProcess[] = [];
    try {
      const began = performance.now();
      agents.push(await startLeadingAgent(cp, dir, configPath, "a"));
      figure(`agent leads ${seconds(performance.now() - began)} s after start`);

      await t.step(
        "a LoadBalancer Service gets an address, finalizer, pool and events",
        async () => {
          await createNamespace(cp, "alloc");
          const created = performance.now();
          await createLbService(cp, "alloc", "web");
          const { service } = await waitIngress(cp, "alloc", "web");
          figure(`time to ingress, first Service: ${seconds(performance.now() - created)} s`);
          assert.deepEqual(service.status?.loadBalancer?.ingress, [
            { ip: "192.0.2.1", ipMode: "VIP" },
          ]);
          assert.ok(hasFinalizer(service), "the cleanup finalizer is set");
          const annotated = await waitFor(async () => {
            const s = await getService(cp, "alloc", "web");
            return s?.metadata?.annotations?.[POOL_ANNOTATION];
          }, { message: "the pool annotation" });
          assert.equal(annotated, "lan");
          const ensured = await waitEvent(cp, "alloc", "web", "EnsuredLoadBalancer");
          assert.equal(ensured.source?.component, "service-controller");
          assert.equal(ensured.involvedObject.uid, service.metadata?.uid);
        },
      );

      await t.step("each requested-address source and pool annotation is honoured", async () => {
        await createNamespace(cp, "req");
        const wanted: [string, Parameters<typeof createLbService>[3], string][] = [
          ["spec-ip", { spec: { loadBalancerIP: "192.0.2.10" } }, "192.0.2.10"],
          [
            "keelson",
            { annotations: { "keelson.io/load-balancer-ips": "192.0.2.11" } },
            "192.0.2.11",
          ],
          [
            "metallb",
            { annotations: { "metallb.io/loadBalancerIPs": "192.0.2.12" } },
            "192.0.2.12",
          ],
          [
            "metallb-legacy",
            { annotations: { "metallb.universe.tf/loadBalancerIPs": "192.0.2.13" } },
            "192.0.2.13",
          ],
          [
            "kube-vip",
            { annotations: { "kube-vip.io/loadbalancerIPs": "192.0.2.9" } },
            "192.0.2.9",
          ],
        ];
        const created = performance.now();
        await Promise.all(wanted.map(([name, shape]) => createLbService(cp, "req", name, shape)));
        await createLbService(cp, "req", "pool-keelson", {
          annotations: { "keelson.io/address-pool": "dmz" },
        });
        await createLbService(cp, "req", "pool-metallb", {
          annotations: { "metallb.io/address-pool": "dmz" },
        });
        for (const [name, , ip] of wanted) {
          const { service } = await waitIngress(cp, "req", name);
          assert.deepEqual(ingressIps(service), [ip], name);
        }
        const fromDmz: string[] = [];
        for (const name of ["pool-keelson", "pool-metallb"]) {
          const { service } = await waitIngress(cp, "req", name);
          const [ip] = ingressIps(service);
          assert.ok(inV4Range(ip!, ...DMZ), `${name} got ${ip}, outside pool dmz`);
          fromDmz.push(ip!);
          const s = await waitFor(async () => {
            const s = await getService(cp, "req", name);
            return s?.metadata?.annotations?.[POOL_ANNOTATION] ? s : undefined;
          });
          assert.equal(s.metadata?.annotations?.[POOL_ANNOTATION], "dmz");
        }
        assert.notEqual(fromDmz[0], fromDmz[1]);
        figure(
          `time to ingress, 7 Services created at once, until all have ingress and pool annotations: ${
            seconds(performance.now() - created)
          } s`,
        );
      });

      await t.step("taken, reserved and out-of-pool requests warn and stay pending", async () => {
        await createNamespace(cp, "refuse");
        await createLbService(cp, "refuse", "taken", {
          annotations: { "keelson.io/load-balancer-ips": "192.0.2.10" },
        });
        await createLbService(cp, "refuse", "reserved", { spec: { loadBalancerIP: "192.0.2.14" } });
        await createLbService(cp, "refuse", "outside", {
          annotations: { "metallb.io/loadBalancerIPs": "203.0.113.200" },
        });
        assert.match(
          await waitRefused(cp, "refuse", "taken", "AddressInUse"),
          /"192\.0\.2\.10" is in use: service "req\/spec-ip" holds it/,
        );
        assert.match(
          await waitRefused(cp, "refuse", "reserved", "AddressReserved"),
          /"192\.0\.2\.14" is reserved in pool "lan"/,
        );
        assert.match(
          await waitRefused(cp, "refuse", "outside", "AddressNotInPool"),
          /"203\.0\.113\.200" is not in any pool/,
        );
        for (const name of ["taken", "reserved", "outside"]) {
          const service = await getService(cp, "refuse", name);
          assert.deepEqual(ingressIps(service), [], `${name} stays pending`);
          // the finalizer comes with the first address: a pending Service holds nothing to
          // release, so its deletion does not wait for Keelson
          assert.ok(!hasFinalizer(service), `${name} carries no finalizer while pending`);
        }
        const holder = await getService(cp, "req", "spec-ip");
        assert.deepEqual(ingressIps(holder), ["192.0.2.10"], "the holder keeps its address");
      });

      await t.step(
        "a sharing key shares an address across ports and refuses a port twice",
        async () => {
          await createNamespace(cp, "share");
          const key = { "keelson.io/allow-shared-ip": "k1" };
          await createLbService(cp, "share", "a", { annotations: key, ports: [[80, "TCP"]] });
          const [shared] = ingressIps((await waitIngress(cp, "share", "a")).service);
          assert.ok(inV4Range(shared!, ...LAN));
          await createLbService(cp, "share", "b", { annotations: key, ports: [[443, "TCP"]] });
          await createLbService(cp, "share", "udp", {
            annotations: {
              "metallb.io/allow-shared-ip": "k1",
              "metallb.io/loadBalancerIPs": shared!,
            },
            ports: [[80, "UDP"]],
          });
          assert.deepEqual(ingressIps((await waitIngress(cp, "share", "b")).service), [shared]);
          assert.deepEqual(ingressIps((await waitIngress(cp, "share", "udp")).service), [shared]);

          await createLbService(cp, "share", "same-port", {
            annotations: { ...key, "keelson.io/load-balancer-ips": shared! },
            ports: [[80, "TCP"]],
          });
          await createLbService(cp, "share", "other-key", {
            annotations: {
              "keelson.io/allow-shared-ip": "k2",
              "keelson.io/load-balancer-ips": shared!,
            },
            ports: [[8080, "TCP"]],
          });
          assert.match(
            await waitRefused(cp, "share", "same-port", "AddressInUse"),
            /sharing key "k1" and also uses port "TCP\/80"/,
          );
          assert.match(
            await waitRefused(cp, "share", "other-key", "AddressInUse"),
            /with sharing key "k1", not "k2"/,
          );
          for (const name of ["same-port", "other-key"]) {
            assert.deepEqual(
              ingressIps(await getService(cp, "share", name)),
              [],
              `${name} pending`,
            );
          }
        },
      );

      await t.step("dual-stack families come from one pool, in spec.ipFamilies order", async () => {
        await createNamespace(cp, "dual");
        await createLbService(cp, "dual", "require", {
          spec: { ipFamilyPolicy: "RequireDualStack", ipFamilies: ["IPv4", "IPv6"] },
        });
        await createLbService(cp, "dual", "require-v6-first", {
          spec: { ipFamilyPolicy: "RequireDualStack", ipFamilies: ["IPv6", "IPv4"] },
        });
        await createLbService(cp, "dual", "prefer", {
          spec: { ipFamilyPolicy: "PreferDualStack" },
        });
        await createLbService(cp, "dual", "v6-only", {
          spec: { ipFamilyPolicy: "SingleStack", ipFamilies: ["IPv6"] },
        });
        const seen = new Set<string>();
        for (
          const [name, order] of [
            ["require", [4, 6]],
            ["require-v6-first", [6, 4]],
            ["prefer", [4, 6]],
            ["v6-only", [6]],
          ] as const
        ) {
          const { service } = await waitIngress(cp, "dual", name);
          const ips = ingressIps(service);
          assert.equal(ips.length, order.length, `${name}: ${ips.join(", ")}`);
          order.forEach((family, i) => {
            const ip = ips[i]!;
            if (family === 4) assert.ok(inV4Range(ip, ...DS_V4), `${name}: ${ip} not in vlan-ds`);
            else assert.match(ip, DS_V6_REGEXP, `${name}: ${ip} not in vlan-ds`);
            assert.ok(!seen.has(ip), `${ip} given twice`);
            seen.add(ip);
          });
          for (const entry of service.status?.loadBalancer?.ingress ?? []) {
            assert.equal(entry.ipMode, "VIP");
          }
        }
        const require = await getService(cp, "dual", "require");
        assert.deepEqual(require?.spec?.ipFamilies, ["IPv4", "IPv6"]);
      });

      await t.step("a Service of another class is untouched; our class is served", async () => {
        await createNamespace(cp, "class");
        await createLbService(cp, "class", "other", {
          spec: { loadBalancerClass: "example.com/other" },
        });
        await createLbService(cp, "class", "ours", {
          spec: { loadBalancerClass: "keelson.io/vip" },
        });
        // one worker, first in first out: "ours" served means "other" was passed over
        const { service } = await waitIngress(cp, "class", "ours");
        assert.ok(inV4Range(ingressIps(service)[0]!, ...LAN));
        const other = await getService(cp, "class", "other");
        assert.deepEqual(other?.metadata?.finalizers ?? [], []);
        assert.deepEqual(other?.status?.loadBalancer ?? {}, {});
        assert.deepEqual(await eventsOf(cp, "class", "other"), []);
      });

      await t.step("deleting a Service releases its address to the next Service", async () => {
        await cp.requestOk("DELETE", "/api/v1/namespaces/alloc/services/web");
        const deleted = performance.now();
        await waitFor(async () => (await getService(cp, "alloc", "web")) === undefined, {
          message: "alloc/web to disappear",
        });
        figure(
          `Service with the finalizer gone ${seconds(performance.now() - deleted)} s after DELETE`,
        );
        await waitEvent(cp, "alloc", "web", "DeletedLoadBalancer");
        await createLbService(cp, "alloc", "next");
        const { service } = await waitIngress(cp, "alloc", "next");
        assert.deepEqual(ingressIps(service), ["192.0.2.1"], "the released address is reused");
      });

      await t.step(
        "type changed to ClusterIP clears ingress and finalizer, frees the address",
        async () => {
          await cp.requestOk("PATCH", "/api/v1/namespaces/req/services/kube-vip", {
            spec: { type: "ClusterIP" },
          });
          const service = await waitFor(async () => {
            const s = await getService(cp, "req", "kube-vip");
            return s && ingressIps(s).length === 0 && !hasFinalizer(s) ? s : undefined;
          }, { message: "req/kube-vip to lose ingress and finalizer" });
          assert.equal(service.spec?.type, "ClusterIP");
          await createLbService(cp, "req", "reuse", { spec: { loadBalancerIP: "192.0.2.9" } });
          assert.deepEqual(ingressIps((await waitIngress(cp, "req", "reuse")).service), [
            "192.0.2.9",
          ]);
        },
      );

      await t.step(
        "a Service pending on a taken address gets it once the holder is deleted",
        async () => {
          await cp.requestOk("DELETE", "/api/v1/namespaces/req/services/spec-ip");
          const deleted = performance.now();
          const { service } = await waitIngress(cp, "refuse", "taken");
          figure(
            `pending Service got the released address ${
              seconds(performance.now() - deleted)
            } s after its holder was deleted`,
          );
          assert.deepEqual(ingressIps(service), ["192.0.2.10"]);
        },
      );

      await t.step("refused Services are still pending and no address is held twice", async () => {
        const list = await cp.requestOk<{ items: V1Service[] }>("GET", "/api/v1/services");
        const ips = list.items.flatMap((s) =>
          ingressIps(s).map((ip) => [ip, `${s.metadata?.namespace}/${s.metadata?.name}`])
        );
        const byIp = new Map<string, string[]>();
        for (const [ip, key] of ips) byIp.set(ip!, [...(byIp.get(ip!) ?? []), key!]);
        for (const [ip, holders] of byIp) {
          if (ip === ingressIps(await getService(cp, "share", "a"))[0]) {
            assert.deepEqual(holders.sort(), ["share/a", "share/b", "share/udp"]);
          } else assert.equal(holders.length, 1, `${ip} held by ${holders.join(", ")}`);
        }
        for (const name of ["reserved", "outside"]) {
          assert.deepEqual(ingressIps(await getService(cp, "refuse", name)), [], name);
        }
      });

      await t.step(
        "with default_class = false only keelson.io/vip Services are served",
        async () => {
          await agents[0]!.stop();
          const otherConfig = `${dir}/keelson-classed.toml`;
          await Deno.writeTextFile(otherConfig, lbInventory({ pools: POOLS, defaultClass: false }));
          agents.push(await startLeadingAgent(cp, dir, otherConfig, "b"));
          await createNamespace(cp, "noclass");
          await createLbService(cp, "noclass", "unclassed");
          await createLbService(cp, "noclass", "vip", {
            spec: { loadBalancerClass: "keelson.io/vip" },
          });
          const { service } = await waitIngress(cp, "noclass", "vip");
          const [ip] = ingressIps(service);
          const list = await cp.requestOk<{ items: V1Service[] }>("GET", "/api/v1/services");
          const others = list.items.filter((s) => s.metadata?.uid !== service.metadata?.uid)
            .flatMap((s) => ingressIps(s));
          assert.ok(!others.includes(ip!), `${ip} was already held by an unclassed Service`);
          const unclassed = await getService(cp, "noclass", "unclassed");
          assert.deepEqual(unclassed?.metadata?.finalizers ?? [], []);
          assert.deepEqual(unclassed?.status?.loadBalancer ?? {}, {});
          // Services the first agent served keep their addresses
          assert.deepEqual(ingressIps(await getService(cp, "alloc", "next")), ["192.0.2.1"]);
        },
      );
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await Deno.remove(dir, { recursive: true });
    }
  },
);
