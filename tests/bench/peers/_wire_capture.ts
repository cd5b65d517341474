/**
 * Where an idle Node's time goes, seen on the wire: a packet capture on loopback (`tcpdump`) beside
 * the `idle-nodes` scenario, its sockets mapped to processes with `ss -tnp`. Per Node: the
 * apiserver's watch event reaching the agent → the agent's initialization PUT leaving (the agent's
 * reaction), the PUT → the apiserver's etcd transaction, the PUT → its answer. TLS hides the
 * payloads, so packets are told apart by process, connection, order and size: a Node event, a PUT
 * and an etcd write are over 1000 bytes, the control frames and acknowledgements are not.
 *
 * Asked for with `KEELSON_PEERS_CAPTURE=1`; needs root and tcpdump (`apt-get install tcpdump`). A
 * diagnostic of the benchmark, never run by the tests.
 *
 * @module
 */
import { summarize, type Summary } from "../_report.ts";

/** Per-Node figures from the wire, in ms. */
export interface WireFigures {
  /** Nodes whose whole sequence was found. */
  nodes: number;
  /** Watch event to the agent → the agent's PUT on the wire. */
  reaction: Summary;
  /** The PUT on the wire → the apiserver's write to etcd. */
  putToEtcd: Summary;
  /** The PUT on the wire → its answer on the wire. */
  put: Summary;
}

/** One TCP segment with a payload. */
interface Segment {
  /** Capture time, ms. */
  atMs: number;
  /** `ip:port` of the sender. */
  from: string;
  /** `ip:port` of the receiver. */
  to: string;
  /** Payload bytes. */
  bytes: number;
}

/** A running capture. */
export interface WireCapture {
  /**
   * Stops the capture and computes the figures.
   * @param agentPid the controller manager's pid
   * @param benchPid the process that creates the Nodes (this one)
   * @returns the figures
   */
  finish(agentPid: number, benchPid?: number): Promise<WireFigures>;
}

/**
 * Starts tcpdump on `lo` and a poller of `ss` (every 500 ms) that remembers which process owns each
 * local socket.
 * @returns the capture
 * @throws {Error} when tcpdump cannot be started
 */
export async function startWireCapture(): Promise<WireCapture> {
  const file = await Deno.makeTempFile({ prefix: "keelson-wire-", suffix: ".pcap" });
  let tcpdump: Deno.ChildProcess;
  try {
    tcpdump = new Deno.Command("tcpdump", {
      args: ["-i", "lo", "-s", "160", "-U", "-n", "-w", file, "tcp"],
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (error) {
    await Deno.remove(file).catch(() => {});
    throw new Error(
      `KEELSON_PEERS_CAPTURE=1 needs tcpdump and root (apt-get install tcpdump): ${error}`,
    );
  }
  const owners = new Map<string, { name: string; pid: number }>();
  const stop = new AbortController();
  const poll = (async () => {
    while (!stop.signal.aborted) {
      const out = await new Deno.Command("ss", {
        args: ["-tnpH", "state", "established"],
        stdout: "piped",
        stderr: "null",
      }).output();
      for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
        const m = /^\s*\d+\s+\d+\s+(\S+)\s+\S+\s+users:\(\("([^"]+)",pid=(\d+)/.exec(line);
        if (m) owners.set(m[1]!, { name: m[2]!, pid: Number(m[3]) });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  // tcpdump needs a moment before it captures
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return {
    async finish(agentPid, benchPid = Deno.pid) {
      stop.abort();
      await poll;
      await new Promise((resolve) => setTimeout(resolve, 200));
      try {
        tcpdump.kill("SIGINT");
      } catch {
        // already gone
      }
      await tcpdump.status;
      const segments = readSegments(await Deno.readFile(file));
      await Deno.remove(file).catch(() => {});
      return wireFigures(segments, (endpoint) => {
        const owner = owners.get(endpoint);
        if (!owner) return "other";
        if (owner.pid === agentPid) return "agent";
        if (owner.pid === benchPid) return "bench";
        if (owner.name === "kube-apiserver") return "apiserver";
        if (owner.name === "etcd") return "etcd";
        return "other";
      });
    },
  };
}

/**
 * The TCP segments with a payload in a pcap file (Ethernet link type, as tcpdump writes for `lo`;
 * IPv4 only).
 * @param data the file
 * @returns the segments in capture order
 */
export function readSegments(data: Uint8Array): Segment[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const magic = view.getUint32(0, true);
  const little = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  const nanos = magic === 0xa1b23c4d || magic === 0x4d3cb2a1;
  const segments: Segment[] = [];
  let offset = 24;
  while (offset + 16 <= data.byteLength) {
    const seconds = view.getUint32(offset, little);
    const fraction = view.getUint32(offset + 4, little);
    const captured = view.getUint32(offset + 8, little);
    const packet = offset + 16;
    offset = packet + captured;
    const ip = packet + 14; // Ethernet header
    if (offset > data.byteLength || ip + 20 > offset || data[ip]! >> 4 !== 4) continue;
    const ipHeader = (data[ip]! & 0x0f) * 4;
    const total = view.getUint16(ip + 2);
    const tcp = ip + ipHeader;
    const tcpHeader = (data[tcp + 12]! >> 4) * 4;
    const bytes = total - ipHeader - tcpHeader;
    if (bytes <= 0) continue;
    const address = (at: number) => `${data[at]}.${data[at + 1]}.${data[at + 2]}.${data[at + 3]}`;
    segments.push({
      atMs: seconds * 1000 + fraction / (nanos ? 1e6 : 1e3),
      from: `${address(ip + 12)}:${view.getUint16(tcp)}`,
      to: `${address(ip + 16)}:${view.getUint16(tcp + 2)}`,
      bytes,
    });
  }
  return segments;
}

/** Which process an endpoint belongs to. */
type Role = "agent" | "bench" | "apiserver" | "etcd" | "other";

/**
 * The per-Node figures: each Node starts with the bench's POST (the first bench → apiserver segment
 * after a quiet 150 ms); within 100 ms of it, the first big apiserver → agent segment (the watch
 * event), the agent's next big segment to the apiserver (the PUT), the apiserver's next big segment
 * to etcd, and the first sizeable answer on the PUT's connection.
 * @param segments the capture
 * @param role the owner of an endpoint
 * @returns the figures
 */
export function wireFigures(segments: Segment[], role: (endpoint: string) => Role): WireFigures {
  const starts: number[] = [];
  for (const s of segments) {
    if (role(s.from) !== "bench" || role(s.to) !== "apiserver") continue;
    if (starts.length === 0 || s.atMs - starts[starts.length - 1]! > 150) starts.push(s.atMs);
  }
  const reaction: number[] = [];
  const putToEtcd: number[] = [];
  const put: number[] = [];
  let cursor = 0;
  for (const start of starts) {
    while (cursor < segments.length && segments[cursor]!.atMs < start) cursor++;
    const window: Segment[] = [];
    for (let i = cursor; i < segments.length && segments[i]!.atMs < start + 100; i++) {
      window.push(segments[i]!);
    }
    const event = window.find((s) =>
      role(s.from) === "apiserver" && role(s.to) === "agent" && s.bytes > 1000
    );
    if (!event) continue;
    const request = window.find((s) =>
      s.atMs > event.atMs && role(s.from) === "agent" && role(s.to) === "apiserver" &&
      s.bytes > 1000
    );
    if (!request) continue;
    const answer = window.find((s) =>
      s.atMs > request.atMs && s.from === request.to && s.to === request.from && s.bytes > 500
    );
    const write = window.find((s) =>
      s.atMs > request.atMs && role(s.from) === "apiserver" && role(s.to) === "etcd" &&
      s.bytes > 1000
    );
    if (!answer || !write) continue;
    reaction.push(request.atMs - event.atMs);
    putToEtcd.push(write.atMs - request.atMs);
    put.push(answer.atMs - request.atMs);
  }
  return {
    nodes: reaction.length,
    reaction: summarize(reaction),
    putToEtcd: summarize(putToEtcd),
    put: summarize(put),
  };
}
