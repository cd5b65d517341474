import assert from "node:assert/strict";
import { stagedKeepalivedProblem } from "../../../../../providers/baremetal/host_apply/staged_keepalived.ts";
import { renderHostKeepalived } from "../../../../../providers/baremetal/keepalived/announcer.ts";
import { renderWithdrawnConfig } from "../../../../../providers/baremetal/keepalived/render.ts";
import { testConfig, vipRange } from "../keepalived/_inventory.ts";
import { ConfigSchema } from "../../../../../src/config/schema.ts";

const AGENT = "keelson";

function rendered(host: string, serviceVips: string[], notifyFifoUser?: string): string {
  const out = renderHostKeepalived({
    config: testConfig(),
    host,
    serviceVips,
    ...(notifyFifoUser ? { notifyFifoUser } : {}),
  });
  if ("error" in out) throw new Error(out.error);
  return out.text;
}

const judge = (text: string, host = "cp-1", config = testConfig()) =>
  stagedKeepalivedProblem(text, { config, host, agentUser: AGENT });

Deno.test("Keelson's own renderings are accepted, for every host, VIP set and FIFO choice", () => {
  for (const host of ["cp-1", "cp-2", "cp-3"]) {
    for (const vips of [[], vipRange(3), vipRange(40), vipRange(300, 10, 3)]) {
      assert.equal(judge(rendered(host, vips, AGENT), host), undefined);
      assert.equal(judge(rendered(host, vips), host), undefined);
    }
  }
});

Deno.test("a held-back host's file is accepted: a NotReady Node's, and a machine in maintenance's only while the inventory says so", () => {
  const vips = vipRange(40);
  // the agent renders without the Service instances; root reads no Node but sees no Service VIP
  const notReady = renderHostKeepalived({
    config: testConfig(),
    host: "cp-1",
    serviceVips: vips,
    notifyFifoUser: AGENT,
    nodeReady: false,
  });
  if ("error" in notReady) throw new Error(notReady.error);
  assert.ok(notReady.withheld, "the render held the Service VIPs back");
  assert.match(notReady.text, /keelson_cp_v4/);
  assert.doesNotMatch(notReady.text, /keelson_v4_g/);
  assert.equal(judge(notReady.text), undefined);

  const input = testConfigInput();
  const machines = input.machines as { name: string; state?: string }[];
  const maintenance = ConfigSchema.parse({
    ...input,
    machines: machines.map((m) => m.name === "cp-2" ? { ...m, state: "maintenance" } : m),
  });
  const held = renderHostKeepalived({ config: maintenance, host: "cp-2", serviceVips: vips });
  if ("error" in held) throw new Error(held.error);
  assert.doesNotMatch(held.text, /vrrp_instance/);
  assert.equal(judge(held.text, "cp-2", maintenance), undefined);
  // an active machine's file must hold its control-plane instance: the held one is refused
  assert.match(judge(held.text, "cp-2")!, /not what Keelson renders/);
  // and a machine in maintenance cannot stage an instance back
  assert.match(judge(rendered("cp-2", vips), "cp-2", maintenance)!, /not what Keelson renders/);
});

Deno.test("a retired host's withdrawn file is accepted, and only for a host the inventory withdraws", () => {
  const config = ConfigSchema.parse(testConfigInput());
  const retired = ConfigSchema.parse(retire(testConfigInput(), "cp-2"));
  assert.equal(judge(renderWithdrawnConfig("cp-2"), "cp-2", retired), undefined);
  assert.match(judge(renderWithdrawnConfig("cp-2"), "cp-2", config)!, /line 2 differs/);
  // and a retired host gets no instance back
  assert.match(judge(rendered("cp-2", []), "cp-2", retired)!, /not what Keelson renders/);
});

/** What keelson's account might write instead, each a way to reach root or the network. */
const HOSTILE: [string, (text: string) => string][] = [
  [
    "a root notify script",
    (t) => t.replace("    nopreempt\n", '    nopreempt\n    notify_master "/bin/sh -c id" root\n'),
  ],
  [
    "a notify script on a Service instance",
    (t) => t.replace(/( {4}preempt_delay 30\n)/, '$1    notify "/tmp/x"\n'),
  ],
  [
    "a track_script",
    (t) =>
      t.replace(
        "    track_file {\n",
        "    track_script {\n        chk\n    }\n    track_file {\n",
      ) +
      'vrrp_script chk {\n    script "/bin/touch /pwned"\n}\n',
  ],
  [
    "script_user root in global_defs",
    (t) =>
      t.replace(
        "    fifo_write_vrrp_states_on_reload\n",
        "    fifo_write_vrrp_states_on_reload\n    script_user root\n    enable_script_security off\n",
      ),
  ],
  ["an include", (t) => t + "include /etc/shadow\n"],
  ["an include at the top", (t) => "include /tmp/evil.conf\n" + t],
  [
    "a FIFO owned by root",
    (t) => t.replace(`keepalived-notify.fifo" ${AGENT}`, 'keepalived-notify.fifo" root'),
  ],
  [
    "a FIFO elsewhere",
    (t) => t.replace("/run/keelson-daemons/keepalived-notify.fifo", "/etc/cron.d/x"),
  ],
  [
    "a notify FIFO script",
    (t) =>
      t.replace(
        "    fifo_write_vrrp_states_on_reload\n",
        '    fifo_write_vrrp_states_on_reload\n    vrrp_notify_fifo_script "/bin/sh -c id" root\n',
      ),
  ],
  [
    "a VIP outside every pool (the default gateway)",
    (t) =>
      t.replace(
        "        10.250.0.150/32 dev eth0\n",
        "        10.250.0.150/32 dev eth0\n        10.250.0.1/32 dev eth0\n",
      ),
  ],
  ["another interface", (t) => t.replace("    interface eth0\n", "    interface lo\n")],
  ["a higher priority", (t) => t.replace(/priority 200/, "priority 254")],
  [
    "a virtual route",
    (t) =>
      t.replace(
        "    nopreempt\n",
        "    nopreempt\n    virtual_routes {\n        0.0.0.0/0 via 10.250.0.99\n    }\n",
      ),
  ],
  ["CRLF line ends", (t) => t.replaceAll("\n", "\r\n")],
  ["a missing last newline", (t) => t.slice(0, -1)],
  ["a NUL byte", (t) => t.replace("# VRRP", "\0# VRRP")],
];

for (const [what, edit] of HOSTILE) {
  Deno.test(`a staged file with ${what} is refused, naming the line`, () => {
    const good = rendered("cp-1", vipRange(3), AGENT);
    const bad = edit(good);
    assert.notEqual(bad, good, "the edit changed nothing");
    const problem = judge(bad);
    assert.ok(problem, `accepted:\n${bad}`);
    assert.match(
      problem,
      /not what Keelson renders for host "cp-1" from the inventory: (line \d+|the file)/,
    );
  });
}

Deno.test("the refusal never quotes the staged file (it may be a link to a root-only file)", () => {
  const problem = judge("root:$6$secret:19000:0:99999:7:::\n")!;
  assert.doesNotMatch(problem, /secret|root:/);
  assert.match(problem, /line 1 differs .*expected a line starting with `#`/);
});

Deno.test("every single inserted line a hostile account might add is refused", () => {
  const good = rendered("cp-1", vipRange(5), AGENT);
  const lines = good.split("\n");
  const inserts = [
    '    notify_backup "/usr/bin/id" root',
    "    track_script { x }",
    "include /etc/keepalived/*.conf",
    "    script_user root",
    "        192.168.1.1/32 dev eth0",
    "",
  ];
  for (let at = 0; at < lines.length; at++) {
    for (const insert of inserts) {
      const bad = [...lines.slice(0, at), insert, ...lines.slice(at)].join("\n");
      assert.ok(judge(bad), `accepted with "${insert}" at line ${at + 1}`);
    }
  }
});

function testConfigInput(): Record<string, unknown> {
  return {
    keepalived: { interface: "eth0", vrid_range: [100, 119], track_file_dir: "/run/keelson" },
    control_plane: { vip: ["10.250.0.100"] },
    pools: [{ name: "test-v4", addresses: ["10.250.0.128-10.250.255.254"] }],
    machines: ["cp-1", "cp-2", "cp-3"].map((name, i) => ({
      name,
      role: "control-plane",
      internal_ips: [`10.250.0.${11 + i}`],
    })),
  };
}

function retire(input: Record<string, unknown>, host: string): Record<string, unknown> {
  const machines = (input.machines as Record<string, unknown>[]).map((m) =>
    m.name === host ? { ...m, state: "retired" } : m
  );
  return { ...input, machines };
}
