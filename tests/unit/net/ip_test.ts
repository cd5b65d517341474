import assert from "node:assert/strict";
import {
  canonicalIp,
  compareIps,
  compareIpTexts,
  compareRangeStarts,
  compareValues,
  firstIpOfFamily,
  formatIp,
  formatSpan,
  type IpRange,
  parseIp,
  parseRange,
  rangeHolds,
  rangeSize,
  rangesOverlap,
} from "../../../src/net/ip.ts";

Deno.test("parseIp() and formatIp() round-trip IPv4 and IPv6", () => {
  for (
    const text of [
      "10.0.0.1",
      "0.0.0.0",
      "255.255.255.255",
      "2001:db8::1",
      "::",
      "::1",
      "fe80::1:2:3:4",
      "2001:db8:0:1:1:1:1:1",
    ]
  ) {
    const ip = parseIp(text)!;
    assert.equal(formatIp(ip.family, ip.value), text);
  }
  assert.equal(canonicalIp("2001:0db8:0000:0000:0000:0000:0000:0001"), "2001:db8::1");
  // an IPv4-mapped IPv6 address is the IPv4 address it maps, so one address has one text
  assert.equal(canonicalIp("::ffff:10.0.0.1"), "10.0.0.1");
  assert.equal(parseIp("10.0.0.300"), undefined);
});

Deno.test("parseRange() reads CIDRs, ranges and single addresses", () => {
  const cidr = parseRange("203.0.113.16/28");
  assert.ok(!("error" in cidr));
  assert.equal(rangeSize(cidr), 16n);
  const range = parseRange("10.20.0.100-10.20.0.150");
  assert.ok(!("error" in range));
  assert.equal(rangeSize(range), 51n);
  const v6 = parseRange("2001:db8:100::/120");
  assert.ok(!("error" in v6));
  assert.equal(rangeSize(v6), 256n);
  assert.match((parseRange("10.0.0.300/24") as { error: string }).error, /not an IP address/);
  assert.match((parseRange("10.0.0.1/24") as { error: string }).error, /host bits/);
  assert.match((parseRange("10.0.0.9-10.0.0.1") as { error: string }).error, /comes after/);
  assert.match(
    (parseRange("10.0.0.1-2001:db8::1") as { error: string }).error,
    /different families/,
  );
});

Deno.test("rangesOverlap() compares only ranges of one family", () => {
  const a = parseRange("10.0.0.0/24"),
    b = parseRange("10.0.0.200-10.0.1.5"),
    c = parseRange("10.0.1.0/24");
  const v6 = parseRange("::/0");
  assert.ok(!("error" in a) && !("error" in b) && !("error" in c) && !("error" in v6));
  assert.ok(rangesOverlap(a, b));
  assert.ok(!rangesOverlap(a, c));
  assert.ok(!rangesOverlap(a, v6));
});

Deno.test("compareIps() and compareRangeStarts() order numerically, IPv4 before IPv6", () => {
  const ips = ["2001:db8::10", "10.0.0.10", "2001:db8::9", "10.0.0.9"].map((t) => parseIp(t)!);
  assert.deepEqual(ips.sort(compareIps).map((ip) => formatIp(ip.family, ip.value)), [
    "10.0.0.9",
    "10.0.0.10",
    "2001:db8::9",
    "2001:db8::10",
  ]);
  const ranges = ["2001:db8::/64", "10.0.1.0/24", "10.0.0.0/16"].map((t) =>
    parseRange(t) as IpRange
  );
  assert.deepEqual(ranges.sort(compareRangeStarts).map((r) => r.source), [
    "10.0.0.0/16",
    "10.0.1.0/24",
    "2001:db8::/64",
  ]);
  assert.equal(compareValues(1n, 1n), 0);
});

Deno.test("compareIpTexts() puts addresses in numeric order and other text after them", () => {
  assert.deepEqual(
    ["x", "2001:db8::10", "10.0.0.10", "2001:db8::9", "10.0.0.9"].sort(compareIpTexts),
    [
      "10.0.0.9",
      "10.0.0.10",
      "2001:db8::9",
      "2001:db8::10",
      "x",
    ],
  );
});

Deno.test("rangeHolds() is inclusive at both ends and refuses the other family", () => {
  const range = parseRange("10.0.0.8-10.0.0.9") as IpRange;
  assert.equal(rangeHolds(range, parseIp("10.0.0.8")!), true);
  assert.equal(rangeHolds(range, parseIp("10.0.0.9")!), true);
  assert.equal(rangeHolds(range, parseIp("10.0.0.10")!), false);
  assert.equal(rangeHolds(range, parseIp("10.0.0.7")!), false);
  assert.equal(rangeHolds(range, { family: 6, value: 0xa000008n }), false);
});

Deno.test("firstIpOfFamily() takes the first address of the family, skipping what does not parse", () => {
  assert.deepEqual(
    firstIpOfFamily(["junk", "fd00::1", "10.0.0.2", "10.0.0.1"], 4),
    parseIp("10.0.0.2"),
  );
  assert.deepEqual(firstIpOfFamily(["10.0.0.1"], 6), undefined);
});

Deno.test("parseRange() with hostBits mask reads a CIDR as the network it lies in, as Go does", () => {
  assert.match((parseRange("10.0.0.5/24") as { error: string }).error, /host bits are set/);
  const masked = parseRange("10.0.0.5/24", { hostBits: "mask" }) as IpRange;
  assert.equal(formatSpan(masked), "10.0.0.0-10.0.0.255");
  assert.equal(masked.prefix, 24);
  const v6 = parseRange("2001:db8::1/126", { hostBits: "mask" }) as IpRange;
  assert.equal(formatSpan(v6), "2001:db8::-2001:db8::3");
  const mapped = parseRange("::ffff:10.0.0.5/120", { hostBits: "mask" }) as IpRange;
  assert.equal(formatSpan(mapped), "10.0.0.0-10.0.0.255");
  assert.ok("error" in parseRange("10.0.0.5/33", { hostBits: "mask" }));
  assert.equal(formatSpan(parseRange("10.0.0.7", { hostBits: "mask" }) as IpRange), "10.0.0.7");
});
