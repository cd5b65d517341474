/**
 * Switching a cluster from MetalLB, and from kube-vip, to Keelson without moving an address, on a
 * real kube-apiserver, with Keelson as it ships (the bundle with the baked flags, run as the
 * unprivileged test user): the old controller's configuration as kubectl exports it, 50
 * LoadBalancer Services whose annotations and statuses are what the old controller wrote, Nodes
 * for the machines. Then the README's steps: `keelson import … --kubeconfig` writes an inventory,
 * the operator's edits (each said below), `keelson check` exits 0, the live `keelson plan` exits
 * 0, the offline plan of a `kubectl get` snapshot keeps every Service's address, and `keelson run`
 * takes over: the apiserver's audit log shows that none of Keelson's writes touched a Service's
 * `status.loadBalancer.ingress` (its finalizer and pool annotation are counted apart), every
 * Service still has exactly the ingress it had, and every VIP is in what the host serves: its
 * rendered keepalived file and its heartbeat's VRRP instances (keepalived itself is not started),
 * or for BGP pools its rendered BIRD file. Stopping Keelson (a rollback's first step) writes no
 * Service. A wrong inventory (a pool written as a Keelson CIDR, which never hands out the first
 * and last addresses the old controller did) is caught by the offline plan and by the live plan
 * against the good file, so those checks can fail.
 *
 * Figures (writes per Service, time to take over) are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { type ControlPlane, integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import {
  keelsonCommand,
  readableByTestUser,
  type ShippedDirs,
  shippedDirs,
} from "./_harness/shipped_keelson.ts";
import { startKeelson } from "./_harness/keelson_process.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { registerNode } from "./_harness/kubelet.ts";
import { CLEANUP_FINALIZER, figure, POOL_ANNOTATION } from "./_harness/lb_services.ts";
import { waitFor } from "./_harness/wait.ts";
import { quietFor } from "./_harness/quiet.ts";
import { decodeHostReport } from "../../src/status/host_report.ts";

const LEADER = 'leader_election_master_status{name="keelson"}';

/** Audit: every write to Services, Nodes and Events, with its request body. */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Request
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: ""
        resources: ["services", "services/status", "nodes", "nodes/status", "events"]
      - group: "events.k8s.io"
        resources: ["events"]
  - level: None
`;

interface AuditEvent {
  verb: string;
  stage: string;
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  requestObject?: unknown;
  responseStatus?: { code: number };
}

/** One Service as the old controller left it. */
interface OldService {
  namespace: string;
  name: string;
  ips: string[];
  /** The pool the address came from (the Keelson pool it must stay in). */
  pool: string;
  annotations: Record<string, string>;
  labels?: Record<string, string>;
  spec?: Record<string, unknown>;
  ports?: [number, "TCP" | "UDP"][];
}

/** The cluster's machines: three control-plane Nodes and two workers, as kubelet registered them. */
const NODES = [
  { name: "cp-1", ip: "10.0.0.11", controlPlane: true },
  { name: "cp-2", ip: "10.0.0.12", controlPlane: true },
  { name: "cp-3", ip: "10.0.0.13", controlPlane: true },
  { name: "w-1", ip: "10.0.0.21", controlPlane: false },
  { name: "w-2", ip: "10.0.0.22", controlPlane: false },
];

// ------------------------------------------------------------------------------------ MetalLB

/**
 * MetalLB's resources as `kubectl get ipaddresspools,l2advertisements,bgpadvertisements,bgppeers,
 * communities,bfdprofiles -A -o yaml` prints them: a pool of a CIDR and a range, a pool only the
 * namespace shop may use, a BGP pool advertised with communities to one peer.
 */
const METALLB_EXPORT = `apiVersion: v1
items:
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata:
    creationTimestamp: "2026-03-02T10:11:12Z"
    generation: 1
    name: public
    namespace: metallb-system
    resourceVersion: "1201"
    uid: 4f0c1a52-8f0e-4d0b-9d41-1f2b8f0f6a01
  spec:
    addresses:
    - 192.0.2.0/27
    - 198.51.100.10-198.51.100.40
    autoAssign: true
    avoidBuggyIPs: false
  status:
    assignedIPv4: 34
    assignedIPv6: 0
    availableIPv4: 29
    availableIPv6: 0
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata:
    name: shop-only
    namespace: metallb-system
  spec:
    addresses:
    - 203.0.113.0/28
    autoAssign: true
    avoidBuggyIPs: false
    serviceAllocation:
      namespaces:
      - shop
      priority: 10
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata:
    name: anycast
    namespace: metallb-system
  spec:
    addresses:
    - 192.0.2.128/28
    autoAssign: false
    avoidBuggyIPs: false
- apiVersion: metallb.io/v1beta1
  kind: L2Advertisement
  metadata:
    name: l2
    namespace: metallb-system
  spec:
    ipAddressPools:
    - public
    - shop-only
- apiVersion: metallb.io/v1beta1
  kind: BGPAdvertisement
  metadata:
    name: anycast-bgp
    namespace: metallb-system
  spec:
    aggregationLength: 32
    communities:
    - 64513:100
    - no-export
    ipAddressPools:
    - anycast
    peers:
    - tor
- apiVersion: metallb.io/v1beta2
  kind: BGPPeer
  metadata:
    name: tor
    namespace: metallb-system
  spec:
    myASN: 64513
    peerASN: 64512
    peerAddress: 10.0.0.1
- apiVersion: metallb.io/v1beta1
  kind: Community
  metadata:
    name: communities
    namespace: metallb-system
  spec:
    communities:
    - name: no-export
      value: 65535:65281
kind: List
metadata:
  resourceVersion: ""
`;

/** What MetalLB writes on a Service it served: the pool it allocated from. */
const METALLB_POOL = "metallb.io/ip-allocated-from-pool";

function v4(prefix: string, n: number): string {
  return `${prefix}.${n}`;
}

/**
 * 50 Services as MetalLB left them: the lowest free addresses of each pool in creation order
 * (192.0.2.0 and .31, a /27's first and last, included: MetalLB hands them out unless
 * avoidBuggyIPs), two sharing 192.0.2.31 through `metallb.universe.tf/allow-shared-ip`, one asking
 * for 198.51.100.40 through `metallb.universe.tf/loadBalancerIPs` and one for 203.0.113.15
 * through `metallb.io/loadBalancerIPs`, ten in shop from its own pool, five asking for the BGP pool.
 */
function metallbServices(): OldService[] {
  const out: OldService[] = [];
  const allocated = (pool: string) => ({ [METALLB_POOL]: pool });
  for (let i = 0; i <= 30; i++) {
    out.push({
      namespace: "web",
      name: `web-${i}`,
      ips: [v4("192.0.2", i)],
      pool: "public",
      annotations: allocated("public"),
    });
  }
  for (const [name, protocol] of [["dns-tcp", "TCP"], ["dns-udp", "UDP"]] as const) {
    out.push({
      namespace: "web",
      name,
      ips: ["192.0.2.31"],
      pool: "public",
      annotations: { ...allocated("public"), "metallb.universe.tf/allow-shared-ip": "dns" },
      ports: [[53, protocol]],
    });
  }
  out.push({
    namespace: "web",
    name: "legacy",
    ips: ["198.51.100.40"],
    pool: "public",
    annotations: {
      ...allocated("public"),
      "metallb.universe.tf/loadBalancerIPs": "198.51.100.40",
    },
  });
  for (let i = 0; i < 10; i++) {
    out.push({
      namespace: "shop",
      name: `shop-${i}`,
      ips: [v4("203.0.113", i)],
      pool: "shop-only",
      annotations: allocated("shop-only"),
    });
  }
  out.push({
    namespace: "shop",
    name: "checkout",
    ips: ["203.0.113.15"],
    pool: "shop-only",
    annotations: { ...allocated("shop-only"), "metallb.io/loadBalancerIPs": "203.0.113.15" },
  });
  for (let i = 0; i < 5; i++) {
    out.push({
      namespace: "edge",
      name: `anycast-${i}`,
      ips: [v4("192.0.2", 128 + i)],
      pool: "anycast",
      annotations: { ...allocated("anycast"), "metallb.io/address-pool": "anycast" },
    });
  }
  return out;
}

/**
 * The same configuration as MetalLB 0.12 kept it (`kubectl get configmap config -n
 * metallb-system -o yaml`): address pools with their protocol, the peer, the communities. 0.12 had
 * no serviceAllocation, so shop-only is open to every namespace there.
 */
const METALLB_012_EXPORT = `apiVersion: v1
data:
  config: |
    peers:
    - peer-address: 10.0.0.1
      peer-asn: 64512
      my-asn: 64513
    bgp-communities:
      no-export: 65535:65281
    address-pools:
    - name: public
      protocol: layer2
      addresses:
      - 192.0.2.0/27
      - 198.51.100.10-198.51.100.40
    - name: shop-only
      protocol: layer2
      addresses:
      - 203.0.113.0/28
    - name: anycast
      protocol: bgp
      auto-assign: false
      addresses:
      - 192.0.2.128/28
      bgp-advertisements:
      - aggregation-length: 32
        communities:
        - 64513:100
        - no-export
kind: ConfigMap
metadata:
  creationTimestamp: "2021-03-02T10:11:12Z"
  name: config
  namespace: metallb-system
  resourceVersion: "911"
  uid: 7c1d0f3e-2b4a-4d6e-8f10-1a2b3c4d5e6f
`;

/** The Services as MetalLB 0.12 left them: the same addresses, without 0.13's pool annotation. */
function metallb012Services(): OldService[] {
  return metallbServices().map((s) => {
    const { [METALLB_POOL]: _, ...annotations } = s.annotations;
    return { ...s, annotations };
  });
}

// ----------------------------------------------------------------------------------- kube-vip

/**
 * kube-vip-cloud-provider's ConfigMap as `kubectl get configmap kubevip -n kube-system -o yaml`,
 * with global and per-namespace keys. kube-vip looks up cidr-NS, cidr-global, range-NS,
 * range-global and takes the first: shop takes cidr-shop (a range, read as one because it holds
 * no "/"), web takes cidr-global (range-web is never reached).
 */
const KUBEVIP_EXPORT = `apiVersion: v1
data:
  allow-share-global: "false"
  cidr-global: 192.0.2.64/26
  cidr-shop: 203.0.113.10-203.0.113.30
  range-web: 10.99.0.1-10.99.0.9
kind: ConfigMap
metadata:
  creationTimestamp: "2026-03-02T10:11:12Z"
  name: kubevip
  namespace: kube-system
  resourceVersion: "311"
  uid: 0b6f7d7e-3c5c-4d55-9f38-6d3f1c4f6d11
`;

/**
 * 50 Services as kube-vip-cloud-provider and kube-vip left them: the label `implementation:
 * kube-vip`, the address in `kube-vip.io/loadbalancerIPs` and in `spec.loadBalancerIP` (it writes
 * both), the status kube-vip wrote. 40 in web from cidr-global (kube-vip hands out 192.0.2.64, the
 * CIDR's first address: it skips only .0 and .255), 10 in shop from cidr-shop.
 */
function kubeVipServices(): OldService[] {
  const out: OldService[] = [];
  const service = (namespace: string, name: string, ip: string, pool: string): OldService => ({
    namespace,
    name,
    ips: [ip],
    pool,
    annotations: { "kube-vip.io/loadbalancerIPs": ip },
    labels: { implementation: "kube-vip" },
    spec: { loadBalancerIP: ip },
  });
  for (let i = 0; i < 40; i++) out.push(service("web", `web-${i}`, v4("192.0.2", 64 + i), ""));
  for (let i = 0; i < 10; i++) out.push(service("shop", `shop-${i}`, v4("203.0.113", 10 + i), ""));
  return out;
}

// ------------------------------------------------------------------------------------ harness

interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs the shipped keelson as the unprivileged test user, as an operator's shell would. */
async function keelson(args: string[]): Promise<Run> {
  const [command, ...argv] = await keelsonCommand(args, { unprivileged: true });
  const out = await new Deno.Command(command!, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, out: decode(out.stdout), err: decode(out.stderr) };
}

async function auditEvents(path: string): Promise<AuditEvent[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => e.stage === "ResponseComplete");
}

/** Keelson's own requests: the agent's user agent (not plan's, import's, or the test's). */
function byAgent(e: AuditEvent): boolean {
  return /^keelson(\/|$)/.test(e.userAgent ?? "");
}

/** Whether a write's body sets `status.loadBalancer.ingress` (to anything, null included). */
function writesIngress(e: AuditEvent): boolean {
  const body = e.requestObject as { status?: { loadBalancer?: Record<string, unknown> } };
  return body?.status?.loadBalancer !== undefined &&
    Object.hasOwn(body.status.loadBalancer ?? {}, "ingress");
}

/** `a x3, b x1` of the values, in first-seen order. */
function countBy(values: string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([v, n]) => `${v} x${n}`).join(", ");
}

async function createCluster(cp: ControlPlane, services: OldService[]): Promise<void> {
  for (const node of NODES) {
    // kubelet without a cloud provider: no providerID, no uninitialized taint
    await registerNode(cp, node.name, {
      providedNodeIp: node.ip,
      initialized: true,
      labels: node.controlPlane ? { "node-role.kubernetes.io/control-plane": "" } : {},
    });
  }
  for (const namespace of new Set(services.map((s) => s.namespace))) {
    await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: namespace } });
  }
  await Promise.all(services.map(async (s) => {
    const path = `/api/v1/namespaces/${s.namespace}/services`;
    await cp.requestOk("POST", path, {
      metadata: { name: s.name, annotations: s.annotations, labels: s.labels ?? {} },
      spec: {
        type: "LoadBalancer",
        selector: { app: s.name },
        ports: (s.ports ?? [[80, "TCP"]]).map(([port, protocol]) => ({
          name: `${protocol.toLowerCase()}-${port}`,
          port,
          protocol,
          targetPort: port,
        })),
        ...s.spec,
      },
    });
    // the old controller writes the status as it does: the address alone
    await cp.requestOk("PATCH", `${path}/${s.name}/status`, {
      status: { loadBalancer: { ingress: s.ips.map((ip) => ({ ip })) } },
    });
  }));
}

async function listServices(cp: ControlPlane): Promise<Map<string, V1Service>> {
  const list = await cp.requestOk<{ items: V1Service[] }>("GET", "/api/v1/services");
  return new Map(
    list.items.filter((s) => s.spec?.type === "LoadBalancer")
      .map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, s]),
  );
}

/** What `kubectl get nodes,svc,endpointslices -A -o yaml` writes (as JSON, which plan reads too). */
async function kubectlSnapshot(cp: ControlPlane): Promise<string> {
  const items: unknown[] = [];
  for (
    const [path, kind, apiVersion] of [
      ["/api/v1/nodes", "Node", "v1"],
      ["/api/v1/services", "Service", "v1"],
      ["/apis/discovery.k8s.io/v1/endpointslices", "EndpointSlice", "discovery.k8s.io/v1"],
    ] as const
  ) {
    const list = await cp.requestOk<{ items: unknown[] }>("GET", path);
    items.push(...list.items.map((o) => ({ apiVersion, kind, ...(o as object) })));
  }
  return JSON.stringify({ apiVersion: "v1", kind: "List", items, metadata: {} });
}

interface Migration {
  /** `metallb` or `kube-vip`. */
  source: "metallb" | "kube-vip";
  /** The exported configuration. */
  exported: string;
  services: OldService[];
  /**
   * The operator's edits of the imported inventory (what the README's step 3 asks for), then the
   * test's own (files under the harness's scratch directories instead of /etc and /run).
   */
  edit: (imported: string, dirs: ShippedDirs, dir: string) => string;
  /** The Keelson pool each Service's address must stay in, from the imported inventory. */
  poolOf: (service: OldService) => string;
  /** Addresses announced over BGP (checked in BIRD's file, not keepalived's). */
  bgp: (service: OldService) => boolean;
  /** A wrong edit of the inventory that loses addresses Services hold, and those (by key). */
  loses: { edit: (inventory: string) => string; held: [string, string][] };
}

/**
 * An interface of this host that keepalived accepts for VRRP (`keepalived -t` refuses the
 * loopback): the one of the default route, else the first other than lo. keepalived is never
 * started here, so nothing is sent on it; Keelson only renders, checks and reads its addresses.
 */
function hostInterface(): string {
  const routes = Deno.readTextFileSync("/proc/net/route").split("\n").slice(1)
    .map((line) => line.split(/\s+/));
  const viaDefault = routes.find((r) => r[1] === "00000000")?.[0];
  if (viaDefault) return viaDefault;
  const other = [...Deno.readDirSync("/sys/class/net")].map((e) => e.name).sort()
    .find((name) => name !== "lo");
  if (!other) throw new Error("this host has no interface but lo; keepalived -t refuses lo");
  return other;
}

/**
 * The operator's edit (README step 3): neither MetalLB's L2Advertisement (no spec.interfaces)
 * nor kube-vip's ConfigMap says which interface the VIPs live on, so the import leaves
 * `# interface = "eth0"` with a comment asking for the interface that carries the machines'
 * internal_ips. Here: this host's own interface (`hostInterface`).
 */
function setInterface(text: string): string {
  const edited = text.replace(/^# interface = "eth0"$/m, `interface = "${hostInterface()}"`);
  assert.notEqual(edited, text, "the import leaves the interface to the operator");
  return edited;
}

/** The test's own edit: Keelson's files under the scratch directories the baked flags allow. */
function scratchFiles(text: string, dirs: ShippedDirs, dir: string, bgp: boolean): string {
  let out = text.replace(
    /^\[keepalived\]\n/m,
    "[keepalived]\n" +
      `config_file = "${dirs.keepalived}/keelson.conf"\n` +
      `pid_file = "${dir}/keepalived.pid"\n` +
      `track_file_dir = "${dirs.track}"\n`,
  );
  if (bgp) {
    out = out.replace(
      /^\[bgp\]\n/m,
      `[bgp]\nconfig_file = "${dirs.bird}/keelson.conf"\nsocket = "${dirs.birdSocket}/bird.ctl"\n`,
    );
  }
  assert.notEqual(out, text, "the imported inventory has a [keepalived] table");
  return out;
}

async function migrate(t: Deno.TestContext, m: Migration): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: `keelson-migration-${m.source}-` });
  await using dirs = await shippedDirs();
  try {
    const audit = `${dir}/audit.log`;
    await Deno.writeTextFile(`${dir}/audit-policy.yaml`, AUDIT_POLICY);
    await using cp = await startControlPlane({
      apiserverArgs: [
        `--audit-policy-file=${dir}/audit-policy.yaml`,
        `--audit-log-path=${audit}`,
      ],
    });
    await createCluster(cp, m.services);
    const before = await listServices(cp);
    assert.equal(before.size, 50);
    const first = `${m.services[0]!.namespace}/${m.services[0]!.name}`;
    figure(
      `${m.source}: a status as the old controller wrote it, as stored: ${
        JSON.stringify(before.get(first)?.status?.loadBalancer)
      }`,
    );

    const files = {
      exported: `${dir}/${m.source}.yaml`,
      imported: `${dir}/keelson.imported.toml`,
      inventory: `${dir}/keelson.toml`,
      snapshot: `${dir}/cluster.json`,
      kubeconfig: `${dir}/admin.kubeconfig`,
    };
    await Deno.writeTextFile(files.exported, m.exported);
    await writeKubeconfig(files.kubeconfig, cp.server, cp.caPem, "admin", { token: cp.adminToken });
    await readableByTestUser(files.exported, files.kubeconfig);

    let imported = "";
    await t.step(
      `keelson import ${m.source} --kubeconfig: an inventory check accepts`,
      async () => {
        const run = await keelson([
          "import",
          m.source,
          "--from",
          files.exported,
          "--kubeconfig",
          files.kubeconfig,
        ]);
        assert.equal(run.code, 0, `${run.err}\n${run.out}`);
        imported = run.out;
        await Deno.writeTextFile(files.imported, imported);
        // the machines come from the Nodes: the control-plane ones by their role label
        for (const node of NODES) {
          assert.ok(imported.includes(`name = "${node.name}"`), `${node.name} imported`);
        }
      },
    );

    await t.step("the operator's edits, then keelson check exits 0", async () => {
      const edited = m.edit(imported, dirs, dir);
      await Deno.writeTextFile(files.inventory, edited);
      await readableByTestUser(files.inventory);
      // what was edited, for the log: a unified diff of the import and the file in use
      const diff = await new Deno.Command("diff", {
        args: ["-u", files.imported, files.inventory],
        stdout: "piped",
      }).output();
      figure(
        `${m.source}: edits of the imported inventory:\n${new TextDecoder().decode(diff.stdout)}`,
      );
      const check = await keelson(["check", "--config", files.inventory]);
      assert.equal(check.code, 0, check.out + check.err);
    });

    // README step 4. Before Keelson runs there is no inventory in force: --current none compares
    // the imported file with the cluster as it stands (every Service's address as the old
    // controller wrote it), so the plan's answer is what Keelson's first start would change.
    await t.step(
      "the live plan against the cluster as it stands (--current none) exits 0: nothing would change",
      async () => {
        const run = await keelson([
          "plan",
          "--config",
          files.inventory,
          "--current",
          "none",
          "--kubeconfig",
          files.kubeconfig,
          "-o",
          "json",
        ]);
        assert.equal(run.code, 0, run.err + run.out);
        const diff = JSON.parse(run.out);
        assert.equal(diff.changes, false);
        assert.deepEqual([diff.read.nodes, diff.read.services], [NODES.length, 51]);
      },
    );

    await t.step(
      "the plan of a kubectl snapshot: every Service keeps its address, in its pool",
      async () => {
        await Deno.writeTextFile(files.snapshot, await kubectlSnapshot(cp));
        await readableByTestUser(files.snapshot);
        const run = await keelson([
          "plan",
          "--config",
          files.inventory,
          "--state",
          files.snapshot,
          "-o",
          "json",
        ]);
        assert.equal(run.code, 0, run.err + run.out);
        const plan = JSON.parse(run.out) as {
          services: { serviceKey: string; outcome: string; ips: string[]; pool: string }[];
          orphans: unknown[];
          nodes: { node: string; actions: unknown[] }[];
        };
        assert.deepEqual(plan.orphans, []);
        const planned = new Map(plan.services.map((s) => [s.serviceKey, s]));
        for (const s of m.services) {
          const key = `${s.namespace}/${s.name}`;
          assert.deepEqual(
            [planned.get(key)?.outcome, planned.get(key)?.ips, planned.get(key)?.pool],
            ["kept", s.ips, m.poolOf(s)],
            key,
          );
        }
        // no Node is initialized, tainted or deleted: they were registered without a cloud provider
        assert.deepEqual(plan.nodes.filter((n) => n.actions.length > 0), []);
        figure(`${m.source}: offline plan: ${plan.services.length} Services kept, no Node action`);
      },
    );

    await t.step(
      "an inventory that loses a held address: the offline plan and the live plan against the good file say so",
      async () => {
        const good = await Deno.readTextFile(files.inventory);
        const bad = m.loses.edit(good);
        assert.notEqual(bad, good);
        const badPath = `${dir}/keelson.bad.toml`;
        await Deno.writeTextFile(badPath, bad);
        await readableByTestUser(badPath);
        const offline = await keelson([
          "plan",
          "-c",
          badPath,
          "--state",
          files.snapshot,
          "-o",
          "json",
        ]);
        assert.equal(offline.code, 0, offline.err);
        const orphans = JSON.parse(offline.out).orphans as { serviceKey: string; ip: string }[];
        assert.deepEqual(orphans.map((o) => [o.serviceKey, o.ip]), m.loses.held);
        const live = await keelson([
          "plan",
          "-c",
          badPath,
          "--current",
          files.inventory,
          "--kubeconfig",
          files.kubeconfig,
          "-o",
          "json",
        ]);
        assert.equal(live.code, 2, live.err);
        const diff = JSON.parse(live.out);
        assert.deepEqual(
          diff.services.map((
            d: { serviceKey: string; change: string },
          ) => [d.serviceKey, d.change]),
          [...new Set(m.loses.held.map(([key]) => key))].map((key) => [key, "stranded"]),
        );
        assert.equal(diff.refused.length, 1, JSON.stringify(diff.refused));
        // before any Keelson runs: the same addresses stranded against the cluster as it stands
        const first = await keelson([
          "plan",
          "-c",
          badPath,
          "--current",
          "none",
          "--kubeconfig",
          files.kubeconfig,
          "-o",
          "json",
        ]);
        assert.equal(first.code, 2, first.err);
        const firstDiff = JSON.parse(first.out);
        assert.deepEqual(
          firstDiff.services.map((
            d: { serviceKey: string; change: string },
          ) => [d.serviceKey, d.change]),
          [...new Set(m.loses.held.map(([key]) => key))].map((key) => [key, "stranded"]),
        );
        assert.deepEqual(firstDiff.refused, []);
      },
    );

    await t.step("keelson run takes over: no ingress rewritten, every VIP served", async () => {
      const kubeconfigForAgent = files.kubeconfig;
      const seen = (await auditEvents(audit)).length;
      const started = performance.now();
      const agent = await startKeelson({
        configPath: files.inventory,
        kubeconfig: kubeconfigForAgent,
        host: "cp-1",
        dir,
        unprivileged: true,
      });
      try {
        await waitFor(async () => (await agent.metric(LEADER)) === 1, {
          timeoutMs: 60_000,
          intervalMs: 200,
          message: "the agent to lead",
        });
        const leadMs = performance.now() - started;
        // taken over: each Service carries Keelson's finalizer and names its pool
        const after = await waitFor(async () => {
          const now = await listServices(cp);
          const done = m.services.every((s) => {
            const got = now.get(`${s.namespace}/${s.name}`);
            return got?.metadata?.finalizers?.includes(CLEANUP_FINALIZER) &&
              got.metadata.annotations?.[POOL_ANNOTATION] === m.poolOf(s);
          });
          return done ? now : undefined;
        }, { timeoutMs: 90_000, intervalMs: 200, message: "every Service taken over" });
        const tookMs = performance.now() - started;

        // served: the rendered files hold every VIP, and the heartbeat's VRRP instances list them
        const vrrp = [...new Set(m.services.filter((s) => !m.bgp(s)).flatMap((s) => s.ips))];
        const bgp = [...new Set(m.services.filter((s) => m.bgp(s)).flatMap((s) => s.ips))];
        const keepalivedFile = `${dirs.keepalived}/keelson.conf`;
        const rendered = await waitFor(async () => {
          const text = await Deno.readTextFile(keepalivedFile).catch(() => "");
          return vrrp.every((ip) =>
              new RegExp(`^\\s+${ip.replaceAll(".", "\\.")}/32\\b`, "m").test(text)
            )
            ? text
            : undefined;
        }, { timeoutMs: 30_000, message: `every VRRP VIP in ${keepalivedFile}` });
        for (const ip of bgp) {
          assert.doesNotMatch(rendered, new RegExp(`\\b${ip.replaceAll(".", "\\.")}/`), ip);
        }
        const heartbeat = await waitFor(async () => {
          const lease = await cp.request<V1Lease>(
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/keelson-host-cp-1",
          );
          const text = lease.body?.metadata?.annotations?.["keelson.io/data-plane"];
          const report = text === undefined ? undefined : decodeHostReport(text);
          if (!report || "error" in report) return undefined;
          const listed = new Set(report.announcements.flatMap((i) => i.vips));
          return vrrp.every((ip) => listed.has(ip)) ? report : undefined;
        }, { timeoutMs: 30_000, message: "the heartbeat to list every VRRP VIP" });
        if (bgp.length > 0) {
          const birdFile = `${dirs.bird}/keelson.conf`;
          await waitFor(async () => {
            const text = await Deno.readTextFile(birdFile).catch(() => "");
            return bgp.every((ip) => text.includes(`${ip}/32`)) ? true : undefined;
          }, { timeoutMs: 30_000, message: `every BGP VIP in ${birdFile}` });
        }

        // trailing writes may land (a pool annotation), none that changes an ingress
        await quietFor(cp, {
          what: "the ingress MetalLB/kube-vip wrote",
          paths: ["/api/v1/services"],
          forMs: 3_000,
          unwanted: (write) =>
            before.has(write.key) &&
            JSON.stringify((write.object as V1Service).status?.loadBalancer) !==
              JSON.stringify(before.get(write.key)?.status?.loadBalancer),
        });
        const final = await listServices(cp);
        for (const s of m.services) {
          const key = `${s.namespace}/${s.name}`;
          assert.deepEqual(
            final.get(key)?.status?.loadBalancer,
            before.get(key)?.status?.loadBalancer,
            `${key}: the ingress MetalLB/kube-vip wrote is unchanged`,
          );
          assert.equal(
            final.get(key)?.metadata?.annotations?.[POOL_ANNOTATION],
            m.poolOf(s),
            key,
          );
          assert.equal(after.get(key)?.spec?.type, "LoadBalancer");
        }
        const writes = (await auditEvents(audit)).slice(seen).filter(byAgent);
        const serviceWrites = writes.filter((e) => e.objectRef?.resource === "services");
        const ingressWrites = serviceWrites.filter(writesIngress);
        const perService = new Map<string, number>();
        for (const e of serviceWrites) {
          const key = `${e.objectRef?.namespace}/${e.objectRef?.name}`;
          perService.set(key, (perService.get(key) ?? 0) + 1);
        }
        const eventWrites = writes.filter((e) => e.objectRef?.resource === "events");
        const nodeWrites = writes.filter((e) => e.objectRef?.resource === "nodes");
        const histogram = new Map<number, number>();
        for (const n of perService.values()) histogram.set(n, (histogram.get(n) ?? 0) + 1);
        figure(
          `${m.source}: takeover of ${m.services.length} Services: leading ${
            (leadMs / 1000).toFixed(2)
          } s after start, every Service carrying the finalizer and pool ${
            (tookMs / 1000).toFixed(2)
          } s after start; heartbeat lists ${
            heartbeat.announcements.flatMap((i) => i.vips).length
          } VRRP VIPs (${bgp.length} BGP VIPs in BIRD's file)`,
        );
        figure(
          `${m.source}: Keelson's writes: ${serviceWrites.length} to Services (${
            [...new Set(serviceWrites.map((e) => `${e.verb} ${e.objectRef?.subresource ?? ""}`))]
              .join(", ")
          }; per Service: ${
            [...histogram].map(([n, count]) => `${count} Services x ${n}`).join(", ")
          }), of which ${ingressWrites.length} set status.loadBalancer.ingress; ${eventWrites.length} Event writes (${
            countBy(eventWrites.map((e) => (e.requestObject as { reason?: string })?.reason ?? "?"))
          }); ${nodeWrites.length} Node writes`,
        );
        assert.equal(
          ingressWrites.length,
          0,
          `writes that set ingress: ${JSON.stringify(ingressWrites.slice(0, 3))}`,
        );
        assert.ok(
          serviceWrites.every((e) => (e.responseStatus?.code ?? 0) < 300),
          "every write succeeded",
        );
        // the finalizer and pool annotation: one status patch per Service
        assert.equal(perService.size, m.services.length, "each Service was written");
        assert.ok([...perService.values()].every((n) => n <= 2), JSON.stringify([...perService]));
        assert.ok(tookMs < 120_000);

        // rollback starts with stopping Keelson: it leaves every status and annotation as it is,
        // so the old controller finds its addresses where it left them
        const stopSeen = (await auditEvents(audit)).length;
        await agent.stop();
        assert.equal((await agent.process.exited()).code, 0);
        // a request the agent sent before it exited lands within the window or not at all
        await quietFor(cp, {
          what: "Services after Keelson stopped",
          paths: ["/api/v1/services"],
          forMs: 1_000,
        });
        const stopped = await listServices(cp);
        for (const s of m.services) {
          const key = `${s.namespace}/${s.name}`;
          assert.deepEqual(stopped.get(key)?.status, before.get(key)?.status, key);
          assert.equal(
            stopped.get(key)?.metadata?.resourceVersion,
            final.get(key)?.metadata?.resourceVersion,
            `${key} not written at stop`,
          );
        }
        const atStop = (await auditEvents(audit)).slice(stopSeen).filter(byAgent)
          .filter((e) => e.objectRef?.resource === "services");
        assert.deepEqual(atStop, []);
      } catch (error) {
        // deno-lint-ignore no-console
        console.error((await agent.log()).split("\n").slice(-60).join("\n"));
        throw error;
      } finally {
        await agent.stop();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

integrationTest(
  "from MetalLB: import, check, live plan exit 0, and keelson run takes over 50 Services without rewriting an ingress",
  async (t) => {
    await migrate(t, {
      source: "metallb",
      exported: METALLB_EXPORT,
      services: metallbServices(),
      // the operator's one edit: MetalLB's L2Advertisement named no interface
      edit: (text, dirs, dir) => scratchFiles(setInterface(text), dirs, dir, true),
      poolOf: (s) => s.pool,
      bgp: (s) => s.pool === "anycast",
      // MetalLB's 192.0.2.0/27 written as a Keelson CIDR, which never hands out .0 (or .31)
      loses: {
        edit: (text) => text.replace('"192.0.2.0-192.0.2.31"', '"192.0.2.0/27"'),
        held: [["web/dns-tcp", "192.0.2.31"], ["web/dns-udp", "192.0.2.31"], [
          "web/web-0",
          "192.0.2.0",
        ]],
      },
    });
  },
);

integrationTest(
  "from MetalLB 0.12 (the config ConfigMap): import, check, live plan exit 0, and keelson run takes over 50 Services without rewriting an ingress",
  async (t) => {
    await migrate(t, {
      source: "metallb",
      exported: METALLB_012_EXPORT,
      services: metallb012Services(),
      // the operator's one edit: MetalLB 0.12's layer2 pools named no interface
      edit: (text, dirs, dir) => scratchFiles(setInterface(text), dirs, dir, true),
      poolOf: (s) => s.pool,
      bgp: (s) => s.pool === "anycast",
      loses: {
        edit: (text) => text.replace('"192.0.2.0-192.0.2.31"', '"192.0.2.0/27"'),
        held: [["web/dns-tcp", "192.0.2.31"], ["web/dns-udp", "192.0.2.31"], [
          "web/web-0",
          "192.0.2.0",
        ]],
      },
    });
  },
);

integrationTest(
  "from kube-vip: import, check, live plan exit 0, and keelson run takes over 50 Services without rewriting an ingress",
  async (t) => {
    await migrate(t, {
      source: "kube-vip",
      exported: KUBEVIP_EXPORT,
      services: kubeVipServices(),
      // the operator's one edit: the interface is kube-vip's DaemonSet's vip_interface
      edit: (text, dirs, dir) => scratchFiles(setInterface(text), dirs, dir, false),
      poolOf: (s) => (s.namespace === "shop" ? "shop" : "global"),
      bgp: () => false,
      // cidr-global written as a Keelson CIDR, which never hands out its first address
      loses: {
        edit: (text) => text.replace('"192.0.2.64-192.0.2.127"', '"192.0.2.64/26"'),
        held: [["web/web-0", "192.0.2.64"]],
      },
    });
  },
);
