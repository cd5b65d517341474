/**
 * The `[bgp]` table, `[[bgp.peers]]` and the per-machine `bgp = { … }` inline table: what BIRD
 * is told to announce, to whom, with which timers. Bounds that BIRD itself would accept but must
 * not get (a password longer than the kernel's TCP-MD5 limit, a reserved ASN, `keepalive >= hold`)
 * are refused here or in `_check_bgp.ts`, so `check` accepting a file means BIRD gets sane values.
 *
 * @module
 */
import * as z from "zod/v4";
import { isIP } from "node:net";
import { parseIp } from "../net/ip.ts";

/**
 * Peer names and community aliases, from a fixed alphabet: a peer's name also names its BIRD
 * protocol (`keelson_peer_<name>`, rendered quoted), an alias appears in comments only.
 */
export const BGP_NAME_REGEXP = /^[a-z0-9]([a-z0-9.-]{0,30}[a-z0-9])?$/;

const bgpName = z.string().regex(
  BGP_NAME_REGEXP,
  "must be lower-case letters, digits, '.' and '-', starting and ending with a letter or digit (at most 32)",
);

// parseIp, not isIP alone: isIP takes a zone id ("fe80::1%eth0"), which BIRD would need as an
// interface and every later reader of the value refuses
const ip = z.string().refine((v) => parseIp(v) !== undefined, {
  message: "is not an IP address (one address, no zone id, no spaces)",
});
const ipv4 = z.string().refine((v) => isIP(v) === 4 && parseIp(v) !== undefined, {
  message: "is not an IPv4 address",
});

/** 16-bit ASN 23456 (AS_TRANS) only stands in for 4-byte ASNs on the wire (RFC 6793). */
export const AS_TRANS = 23456;

/** An autonomous system number: 1 to 4294967295, never AS_TRANS. */
export const asn = z.number().int().min(1).max(4294967295).refine((v) => v !== AS_TRANS, {
  message: "is AS_TRANS (RFC 6793), reserved; use a real ASN",
});

const seconds = (min: number, max: number) => z.number().int().min(min).max(max);

/** An absolute file path without spaces, quotes or `..`. */
export const FILE_PATH_REGEXP = /^\/(?!.*\/\.\.?(\/|$))[A-Za-z0-9._/-]{1,255}$/;
const filePath = z.string().regex(
  FILE_PATH_REGEXP,
  "must be an absolute path of letters, digits, '.', '_', '-' and '/' without '..'",
);

/** Standard `A:B` (16-bit each) or large `A:B:C` (32-bit each) community, or an alias name. */
export const COMMUNITY_REGEXP =
  /^(\d{1,10}:\d{1,10}(:\d{1,10})?|[a-z0-9]([a-z0-9.-]{0,30}[a-z0-9])?)$/;
const community = z.string().regex(
  COMMUNITY_REGEXP,
  'must be "A:B" (standard), "A:B:C" (large) or the name of a [bgp.communities] alias',
);

/** `[bgp.bfd]`: BFD timers used by every peer with `bfd = true`. */
export const BgpBfdSchema = z.strictObject({
  /** Transmit and receive interval in milliseconds (MetalLB's bounds). */
  interval_ms: seconds(10, 60_000).default(300),
  multiplier: seconds(2, 255).default(3),
});

/** One `[[bgp.peers]]` entry: a router the control-plane hosts open sessions to. */
export const BgpPeerSchema = z.strictObject({
  name: bgpName,
  address: ip,
  asn,
  /** Control-plane machines that peer with it; empty with empty `zones`: all of them. */
  hosts: z.array(z.string()).default([]),
  /** Or: control-plane machines whose `zone` (row, rack) is listed. */
  zones: z.array(z.string()).default([]),
  /** 0: directly connected (single hop); 1-255: multihop with that TTL. */
  multihop: seconds(0, 255).default(0),
  bfd: z.boolean().default(false),
  /** TCP-MD5 key, read from this file (mode 0600) at load; never written in the inventory. */
  password_file: filePath.optional(),
  /** Names of `announce = "bgp"` pools it receives; empty: all of them. */
  pools: z.array(z.string()).default([]),
  /** Receives the Nodes' pod CIDRs (route controller) when the Node's IP is on its subnet. */
  pod_cidrs: z.boolean().default(false),
  /**
   * The subnet (CIDR) this peer shares with the Nodes: a Node's pod CIDRs go to it only when the
   * Node's InternalIP lies inside (a single-hop router rejects any other next hop). Required
   * with `pod_cidrs` on a directly connected peer.
   */
  subnet: z.string().optional(),
  /** Receives the control-plane VIP when `[control_plane] announce = "bgp"`. */
  control_plane: z.boolean().default(true),
  communities: z.array(community).default([]),
  /** Sent to iBGP peers only (same ASN). */
  local_preference: z.number().int().min(0).max(4294967295).optional(),
  hold_time: seconds(3, 65535).optional(),
  keepalive_time: seconds(1, 65535).optional(),
});

/** The `[bgp]` table. */
export const BgpSchema = z.strictObject({
  /** The control-plane hosts' ASN (a machine may override it). */
  asn,
  /** The file BIRD reads; Keelson owns it. */
  config_file: filePath.default("/etc/keelson/bird/keelson.conf"),
  /** BIRD's control socket (`bird -s`). */
  socket: filePath.default("/run/bird/bird.ctl"),
  /** Validates a file appended as last argument, before it replaces the one in force. */
  check_command: z.array(z.string()).default(["bird", "-p", "-c"]),
  /** Seconds; BIRD's default 240 kept dead hosts' paths for minutes. */
  hold_time: seconds(3, 65535).default(9),
  keepalive_time: seconds(1, 65535).default(3),
  connect_retry_time: seconds(1, 65535).default(5),
  connect_delay_time: seconds(1, 65535).default(1),
  /** [min, max] seconds BIRD waits after an error; BIRD's 60-300 default turns a flap into a minute. */
  error_wait_time: z.tuple([seconds(1, 65535), seconds(1, 65535)]).default([1, 30]),
  bfd: BgpBfdSchema.prefault({}),
  /** "aware": restarting peers keep our routes; "on": we are a restarting speaker too (bird -R). */
  graceful_restart: z.enum(["aware", "on"]).default("aware"),
  graceful_restart_time: seconds(1, 4095).default(30),
  /** Address families of every session (MP-BGP over one session per peer). */
  families: z.array(z.enum(["ipv4", "ipv6"])).min(1).default(["ipv4", "ipv6"]),
  /** Alias name -> "A:B" or "A:B:C". */
  communities: z.record(bgpName, z.string()).default({}),
  /** How often BIRD's sessions are read for metrics and conditions. */
  status_interval_ms: seconds(200, 60_000).default(2000),
  peers: z.array(BgpPeerSchema).default([]),
});

/** The `bgp = { … }` inline table of one machine. */
export const MachineBgpSchema = z.strictObject({
  /** BIRD's router id; default: the machine's first internal IPv4. Keep it stable. */
  router_id: ipv4.optional(),
  /** Overrides `[bgp] asn` for this host (AS-per-rack designs). */
  asn: asn.optional(),
  /** Source address of this host's sessions; default: chosen by the kernel. */
  source_address: ip.optional(),
});

/** How a pool's or the control-plane VIP's addresses reach the network. */
export const AnnounceSchema = z.enum(["vrrp", "bgp"]).default("vrrp");

/** The validated `[bgp]` table. */
export type BgpConfig = z.infer<typeof BgpSchema>;
/** One validated `[[bgp.peers]]` entry. */
export type BgpPeer = z.infer<typeof BgpPeerSchema>;
