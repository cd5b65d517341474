/**
 * Property: every human-facing output — `keelson status`, `plan` and `check` text —
 * holds no C0 or C1 control character but newline (nor DEL, a line or paragraph separator, or a
 * bidi override), whatever the API objects, snapshot or inventory hold; with colours on, the only
 * escape sequences are the colour codes Keelson paints. The JSON outputs keep every value exact
 * and hold none of them raw either. Generated: leader Leases whose holderIdentity carries
 * `ESC]0;…`/`ESC[2J`, Services whose names and `keelson.io/allocated-from-pool` annotation do,
 * heartbeat reports with unknown keys and values of any text, Nodes with hostile names, labels
 * and addresses, inventories with hostile names, zones and values.
 *
 * Case counts are fixed and seeded (a failure prints its seed).
 *
 * @module
 */
// deno-lint-ignore-file no-control-regex -- the property is about control characters
import assert from "node:assert/strict";
import fc from "fast-check";
import { stringify } from "smol-toml";
import type { V1Lease, V1Node, V1Service } from "@kubernetes/client-node";
import { checkReport } from "../../../src/cli/check.ts";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import type { Config } from "../../../src/config/types.ts";
import { policyFromConfig } from "../../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { formatPlan } from "../../../src/plan/format_plan.ts";
import { planNodes } from "../../../src/plan/plan_nodes.ts";
import { buildClusterStatus } from "../../../src/status/cluster_status.ts";
import { formatStatusJson, formatStatusText } from "../../../src/status/format_status.ts";
import { encodeHostReport } from "../../../src/status/encode_host_report.ts";
import { terminalSafeJson } from "../../../src/text/terminal_safe.ts";
import { createBaremetalProvider } from "../../../providers/baremetal/mod.ts";
import { builtInRecordedPool as recordedPool } from "../_fakes/built_in_records.ts";
import { planAllocations } from "../../../providers/baremetal/ipam/plan_allocations.ts";
import { NOW, report, watched } from "../status/_leases.ts";

/** What a terminal or a text renderer acts on, newline apart. */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/** The same in JSON text, whose strings escape C0 themselves. */
const UNSAFE_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

function assertSafe(text: string, what: string, colours = false): void {
  const bare = colours ? text.replace(/\x1b\[[0-9;]*m/g, "") : text;
  const found = UNSAFE.exec(bare);
  assert.equal(found, null, `${what}: ${JSON.stringify(found?.[0])} in ${JSON.stringify(bare)}`);
}

const DANGER = [
  "\x1b]0;pwned\x07",
  "\x1b[2J",
  "\x1b[H",
  "\x1b[32mHealthy\x1b[0m",
  "\u009b2J",
  "\u009d0;x\u009c",
  "\n2026-01-01 [INF] forged",
  "\r",
  "\t",
  "\x7f",
  "\x00",
  "\x08",
  "\u2028",
  "\u2029",
  "\u202e",
  "\u2066",
];

const hostile = fc.oneof(
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
  {
    weight: 3,
    arbitrary: fc.array(fc.oneof(fc.constantFrom(...DANGER), fc.string({ maxLength: 4 })), {
      maxLength: 4,
    }).map((parts) => parts.join("")),
  },
  { weight: 1, arbitrary: fc.constantFrom("lan", "cp-1", "10.0.0.150") },
);

const VIPS = ["10.0.0.150", "10.0.0.151", "203.0.113.16"];

const heartbeatArb = fc.record({
  host: fc.constantFrom("cp-1", "cp-2", "cp-3"),
  vips: fc.subarray(VIPS),
  ageMs: fc.integer({ min: -600_000, max: 40_000 }),
  annotation: fc.oneof(
    fc.constant<"valid">("valid"),
    fc.record({ key: hostile, value: hostile }), // an unknown key in the report
    hostile, // not a report at all
  ),
});

function heartbeat(h: {
  host: string;
  vips: string[];
  ageMs: number;
  annotation: "valid" | { key: string; value: string } | string;
}): V1Lease {
  const rep = report(h.host, h.vips, { all: VIPS });
  const text = h.annotation === "valid"
    ? encodeHostReport(rep)
    : typeof h.annotation === "string"
    ? h.annotation
    : JSON.stringify({ ...rep, [h.annotation.key]: h.annotation.value });
  return {
    metadata: {
      name: `keelson-host-${h.host}`,
      namespace: "kube-system",
      annotations: { "keelson.io/data-plane": text },
    },
    spec: {
      holderIdentity: h.host,
      leaseDurationSeconds: 15,
      renewTime: new Date(NOW - h.ageMs).toISOString() as unknown as Date,
    },
  };
}

const serviceArb = fc.record({
  namespace: hostile,
  name: hostile,
  pool: hostile,
  ips: fc.subarray(VIPS, { minLength: 1 }),
});

function service(s: { namespace: string; name: string; pool: string; ips: string[] }): V1Service {
  return {
    metadata: {
      namespace: s.namespace,
      name: s.name,
      annotations: { "keelson.io/allocated-from-pool": s.pool },
    },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: s.ips.map((ip) => ({ ip })) } },
  };
}

Deno.test("property: keelson status text holds no control character from the API; its JSON is exact", () => {
  let runs = 0;
  fc.assert(
    fc.property(
      hostile,
      fc.integer({ min: -86_400_000, max: 60_000 }),
      fc.array(serviceArb, { maxLength: 3 }),
      fc.array(heartbeatArb, { maxLength: 4 }),
      fc.boolean(),
      (holder, leaderAge, services, beats, inventory) => {
        runs++;
        const leases = beats.map(heartbeat);
        const leader: V1Lease = {
          metadata: { name: "keelson", namespace: "kube-system" },
          spec: {
            holderIdentity: holder,
            leaseDurationSeconds: 15,
            renewTime: new Date(NOW - leaderAge).toISOString() as unknown as Date,
          },
        };
        const status = buildClusterStatus({
          services: services.map(service),
          leases,
          leaderLease: leader,
          observer: watched(leases, leader),
          nowMs: NOW,
          poolOf: recordedPool,
          ...(inventory ? { inventory: new Set(["cp-1"]) } : {}),
        });
        assertSafe(formatStatusText(status, { color: false }), "status text");
        assertSafe(formatStatusText(status, { color: true }), "status text in colour", true);
        const json = formatStatusJson(status);
        assert.equal(UNSAFE_JSON.exec(json), null, json);
        assert.deepEqual(JSON.parse(json), JSON.parse(JSON.stringify(status)));
      },
    ),
    { numRuns: 400, seed: 2201 },
  );
  assert.equal(runs, 400);
});

const EXAMPLE = new URL("../../../deploy/examples/keelson.toml", import.meta.url).pathname;

const nodeArb = fc.record({
  name: hostile,
  providerID: fc.option(fc.oneof(hostile, fc.constant("baremetal://SN-CP1")), { nil: undefined }),
  labels: fc.dictionary(hostile, hostile, { maxKeys: 2 }),
  addresses: fc.array(fc.oneof(hostile, fc.constant("10.0.0.11")), { maxLength: 2 }),
  hostname: hostile,
  uninitialized: fc.boolean(),
});

function node(n: {
  name: string;
  providerID?: string;
  labels: Record<string, string>;
  addresses: string[];
  hostname: string;
  uninitialized: boolean;
}): V1Node {
  return {
    metadata: { name: n.name, labels: n.labels },
    spec: {
      ...(n.providerID !== undefined ? { providerID: n.providerID } : {}),
      ...(n.uninitialized
        ? {
          taints: [{
            key: "node.cloudprovider.kubernetes.io/uninitialized",
            value: "true",
            effect: "NoSchedule",
          }],
        }
        : {}),
    },
    status: {
      addresses: [
        ...n.addresses.map((address) => ({ type: "InternalIP", address })),
        { type: "Hostname", address: n.hostname },
      ],
    },
  };
}

const planServiceArb = fc.record({
  namespace: hostile,
  name: hostile,
  annotations: fc.dictionary(
    fc.constantFrom(
      "keelson.io/address-pool",
      "keelson.io/load-balancer-ips",
      "keelson.io/allocated-from-pool",
      "keelson.io/allow-shared-ip",
    ),
    hostile,
    { maxKeys: 3 },
  ),
  loadBalancerIP: fc.option(hostile, { nil: undefined }),
  ingress: fc.array(fc.oneof(hostile, fc.constantFrom(...VIPS)), { maxLength: 2 }),
});

Deno.test("property: keelson plan text holds no control character from the snapshot; its JSON is exact", async () => {
  const config = await loadConfigFile(EXAMPLE);
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(nodeArb, { maxLength: 3 }),
      fc.array(planServiceArb, { maxLength: 3 }),
      async (rawNodes, rawServices) => {
        runs++;
        const nodes = rawNodes.map(node);
        const services: V1Service[] = rawServices.map((s) => ({
          metadata: {
            namespace: s.namespace,
            name: s.name,
            annotations: s.annotations,
            creationTimestamp: new Date(NOW),
          },
          spec: {
            type: "LoadBalancer",
            ports: [{ port: 80, protocol: "TCP" }],
            ...(s.loadBalancerIP !== undefined ? { loadBalancerIP: s.loadBalancerIP } : {}),
          },
          status: { loadBalancer: { ingress: s.ingress.map((ip) => ({ ip })) } },
        }));
        const provider = createBaremetalProvider(() => ({ config, healthy: true }));
        provider.instancesV2.useNodes(() => nodes);
        const nodePlans = await planNodes(nodes, provider.instancesV2, {
          policy: policyFromConfig(config),
        });
        const allocation = planAllocations(config, services);
        assertSafe(formatPlan(nodePlans, allocation), "plan text");
        // as `plan --output json` prints it
        const raw = JSON.stringify(
          { nodes: nodePlans, services: allocation },
          (_key, value) => typeof value === "bigint" ? value.toString() : value,
          2,
        );
        const json = terminalSafeJson(raw);
        assert.equal(UNSAFE_JSON.exec(json), null);
        assert.deepEqual(JSON.parse(json), JSON.parse(raw));
      },
    ),
    { numRuns: 200, seed: 2202 },
  );
  assert.equal(runs, 200);
});

const EXAMPLE_TEXT = Deno.readTextFileSync(EXAMPLE);

const inventoryArb = fc.record({
  cluster: fc.record({ name: hostile }),
  keepalived: fc.record({ enabled: fc.boolean(), interface: hostile }),
  pools: fc.array(
    fc.record({
      name: hostile,
      addresses: fc.array(fc.oneof(hostile, fc.constant("10.0.20.0/28"))),
    }),
    { maxLength: 2 },
  ),
  machines: fc.array(
    fc.record({
      name: fc.oneof(hostile, fc.constant("cp-1")),
      role: fc.constantFrom("control-plane", "worker"),
      zone: hostile,
      region: hostile,
      internal_ips: fc.array(fc.oneof(hostile, fc.constant("10.0.0.11")), { maxLength: 1 }),
      labels: fc.dictionary(hostile, hostile, { maxKeys: 1 }),
    }),
    { maxLength: 2 },
  ),
});

Deno.test("property: keelson check text holds no control character from the inventory, one line per problem", () => {
  let runs = 0, valid = 0;
  fc.assert(
    fc.property(
      fc.oneof(
        { weight: 3, arbitrary: inventoryArb.map((raw) => safeStringify(raw)) },
        { weight: 1, arbitrary: hostile },
        // the example inventory with a hostile (but allowed) kubeconfig path: valid, summarized
        {
          weight: 1,
          arbitrary: hostile.map((path) =>
            EXAMPLE_TEXT.replace(
              'kubeconfig = "/etc/keelson/kubeconfig"',
              `kubeconfig = ${JSON.stringify(`/etc/${path}`)}`,
            )
          ),
        },
      ),
      hostile,
      (text, file) => {
        runs++;
        let outcome: Config | ConfigError;
        try {
          outcome = parseConfig(text, file);
          valid++;
        } catch (error) {
          assert.ok(error instanceof ConfigError, String(error));
          outcome = error;
        }
        const out = checkReport(file, outcome);
        assertSafe(out, "check text");
        if (outcome instanceof ConfigError) {
          // one line per problem, and the count line
          assert.equal(out.split("\n").length, outcome.issues.length + 1);
        }
      },
    ),
    { numRuns: 400, seed: 2203 },
  );
  assert.equal(runs, 400);
  assert.ok(valid > 20, `${valid} valid inventories`);
});

/** TOML of the record; a record TOML cannot hold (an empty key) becomes a hostile text itself. */
function safeStringify(raw: Record<string, unknown>): string {
  try {
    return stringify(raw);
  } catch (error) {
    return String(error);
  }
}
