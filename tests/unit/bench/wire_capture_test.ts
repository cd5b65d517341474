import assert from "node:assert/strict";
import { readSegments, wireFigures } from "../../bench/peers/_wire_capture.ts";

/** One Ethernet + IPv4 + TCP packet carrying `bytes` of payload, as tcpdump stores it (snap 160). */
function packet(atMs: number, from: number, to: number, bytes: number): Uint8Array {
  const captured = Math.min(14 + 20 + 20 + bytes, 160);
  const out = new Uint8Array(16 + captured);
  const view = new DataView(out.buffer);
  view.setUint32(0, Math.floor(atMs / 1000), true);
  view.setUint32(4, Math.round((atMs % 1000) * 1000), true);
  view.setUint32(8, captured, true);
  view.setUint32(12, 14 + 20 + 20 + bytes, true);
  const ip = 16 + 14;
  out[ip] = 0x45;
  view.setUint16(ip + 2, 20 + 20 + bytes);
  out.set([127, 0, 0, 1], ip + 12);
  out.set([127, 0, 0, 1], ip + 16);
  view.setUint16(ip + 20, from);
  view.setUint16(ip + 22, to);
  out[ip + 20 + 12] = 5 << 4;
  return out;
}

function pcap(packets: Uint8Array[]): Uint8Array {
  const header = new Uint8Array(24);
  const view = new DataView(header.buffer);
  view.setUint32(0, 0xa1b2c3d4, true);
  view.setUint32(20, 1, true);
  const all = new Uint8Array(24 + packets.reduce((n, p) => n + p.length, 0));
  all.set(header);
  let at = 24;
  for (const p of packets) {
    all.set(p, at);
    at += p.length;
  }
  return all;
}

// ports: 1 bench, 2 apiserver (serving), 3 agent's watch, 4 agent's writes, 5 apiserver's etcd
// client, 6 etcd, 7 unrelated
const roles: Record<string, "bench" | "apiserver" | "agent" | "etcd" | "other"> = {
  "127.0.0.1:1": "bench",
  "127.0.0.1:2": "apiserver",
  "127.0.0.1:3": "agent",
  "127.0.0.1:4": "agent",
  "127.0.0.1:5": "apiserver",
  "127.0.0.1:6": "etcd",
};
const role = (endpoint: string) => roles[endpoint] ?? "other";

Deno.test("readSegments reads time, endpoints and payload size, and skips segments without payload", () => {
  const segments = readSegments(pcap([packet(1000.5, 1, 2, 1463), packet(1001.25, 2, 1, 0)]));
  assert.equal(segments.length, 1);
  assert.equal(segments[0]!.from, "127.0.0.1:1");
  assert.equal(segments[0]!.to, "127.0.0.1:2");
  assert.equal(segments[0]!.bytes, 1463);
  assert.ok(Math.abs(segments[0]!.atMs - 1000.5) < 0.002);
});

Deno.test("wireFigures finds per Node the agent's reaction, the etcd write and the PUT's answer", () => {
  const node = (t: number, reaction: number) => [
    packet(t, 1, 2, 1463), // the bench's POST
    packet(t + 1.0, 5, 6, 1252), // the create in etcd
    packet(t + 1.4, 2, 3, 40), // a control frame: too small to be the event
    packet(t + 1.5, 2, 3, 1857), // the watch event to the agent
    packet(t + 1.5 + reaction, 4, 2, 1487), // the agent's PUT
    packet(t + 1.6 + reaction, 7, 2, 1500), // someone else's request
    packet(t + 2.3 + reaction, 5, 6, 1917), // the update in etcd
    packet(t + 2.9 + reaction, 2, 4, 2869), // the PUT's answer
  ];
  const figures = wireFigures(
    readSegments(pcap([...node(10_000, 1.0), ...node(10_300, 1.2), ...node(10_600, 0.8)])),
    role,
  );
  assert.equal(figures.nodes, 3);
  assert.ok(Math.abs(figures.reaction.p50 - 1.0) < 0.01, String(figures.reaction.p50));
  assert.ok(Math.abs(figures.putToEtcd.p50 - 0.8) < 0.01, String(figures.putToEtcd.p50));
  assert.ok(Math.abs(figures.put.p50 - 1.4) < 0.01, String(figures.put.p50));
});

Deno.test("wireFigures skips a Node whose PUT never left", () => {
  const figures = wireFigures(
    readSegments(pcap([packet(5_000, 1, 2, 1463), packet(5_001.5, 2, 3, 1857)])),
    role,
  );
  assert.equal(figures.nodes, 0);
});
