/**
 * Property: over generated Redfish trees (members with odd ids and trailing slashes, pages with
 * odd next links, wrong counts, systems reporting the machine's serial, another's, a placeholder
 * or nothing, reset targets with dot segments, encoded dots and slashes, other hosts, queries),
 * a named or discovered system, and either transport (a CA, or a pinned certificate), every
 * request the client sends and every action goes to the machine's one system or to none:
 *
 * - a named system: every request is that system (or its standard reset target); an unsafe name
 *   sends nothing;
 * - discovery: the client reads only the collection, the next pages the BMC named, and the
 *   members it listed, each exactly as a safe path;
 * - a reading that says on/off and a ForceOff exist only when one system is provably the
 *   machine's (by the rule the test states on its own: not contradicted when named; the one
 *   member reporting the id, or the only member reporting nothing, of a clean listing, when
 *   discovered), come from it, and the ForceOff goes only to its standard target, once.
 *
 * The server answers any path it does not know with a system that says Off and reports the
 * machine's serial, so a client that strays reads a convincing lie.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import fc from "fast-check";
import {
  RedfishClient,
  RedfishError,
} from "../../../../../providers/baremetal/power/redfish_client.ts";
import { computerSystem, FAKE_REDFISH_CA, startFakeRedfish } from "./_fake_redfish.ts";

const ID = "SN-W1";
const COLLECTION = "/redfish/v1/Systems";
const SAFE_IDS = ["1", "2", "3", "sys-a", "B.2"] as const;
const UNSAFE_IDS = ["..", ".", "", "%2e%2e", "a%2Fb", "1/../2", "x?y", "x#y"] as const;
const FINGERPRINT = new X509Certificate(
  Deno.readTextFileSync(new URL("../../../server/testdata/tls_cert.pem", import.meta.url)),
).fingerprint256;

/** What a reported value is, judged by the test on its own. */
type Says = "id" | "other" | "nothing";
const SERIALS: [string | null | undefined, Says][] = [
  [undefined, "nothing"],
  [null, "nothing"],
  ["", "nothing"],
  ["To Be Filled By O.E.M.", "nothing"],
  [ID, "id"],
  [" sn-w1 ", "id"],
  ["SN-OTHER", "other"],
];
const TAGS: [string | null | undefined, Says][] = [
  [undefined, "nothing"],
  [null, "nothing"],
  [ID, "id"],
  ["TAG-9", "other"],
];
const UUIDS: [string | undefined, Says][] = [
  [undefined, "nothing"],
  ["6ad1b1a0-0000-4000-8000-000000000001", "nothing"],
  [ID, "id"],
];

/** Reset targets, as a function of the system's own path and another system's. */
const TARGETS: Record<string, { make: (self: string, other: string) => string; own: boolean }> = {
  standard: { make: (s) => `${s}/Actions/ComputerSystem.Reset`, own: true },
  dotSelf: { make: (s) => `${s}/./Actions/ComputerSystem.Reset`, own: true },
  dotDotOther: {
    make: (s, o) => `${s}/../${o.split("/").pop()}/Actions/ComputerSystem.Reset`,
    own: false,
  },
  encodedDotDot: {
    make: (s, o) => `${s}/%2e%2E/${o.split("/").pop()}/Actions/ComputerSystem.Reset`,
    own: false,
  },
  encodedSlash: {
    make: (s, o) => `${s}%2F..%2F${o.split("/").pop()}/Actions/ComputerSystem.Reset`,
    own: false,
  },
  backslash: {
    make: (s, o) => `${s}\\..\\${o.split("/").pop()}\\Actions\\ComputerSystem.Reset`,
    own: false,
  },
  otherStandard: { make: (_, o) => `${o}/Actions/ComputerSystem.Reset`, own: false },
  query: { make: (s) => `${s}/Actions/ComputerSystem.Reset?target=2`, own: false },
  collection: { make: () => `${COLLECTION}/Actions/ComputerSystem.Reset`, own: false },
};

interface GenSystem {
  id: (typeof SAFE_IDS)[number];
  serial: number;
  tag: number;
  uuid: number;
  power: "On" | "Off" | "PoweringOff";
  target: string | undefined;
  trailingSlash: boolean;
}

interface GenTree {
  systems: GenSystem[];
  odd: { id: (typeof UNSAFE_IDS)[number]; at: number } | undefined;
  pageSize: number;
  oddLink: { link: string; page: number } | undefined;
  count: "absent" | "right" | "wrong";
  mode: { kind: "named"; id: string } | { kind: "discover" };
  pinned: boolean;
}

/** `value` three times in four, else one of `rest` (edge cases stay common, not dominant). */
function mostly<T>(value: fc.Arbitrary<T>, rest: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ arbitrary: value, weight: 3 }, { arbitrary: rest, weight: 1 });
}

const systemArb: fc.Arbitrary<GenSystem> = fc.record({
  id: fc.constantFrom(...SAFE_IDS),
  // the machine's id as the serial often enough that discovery finds it
  serial: fc.oneof(fc.constant(4), fc.nat(SERIALS.length - 1)),
  tag: fc.nat(TAGS.length - 1),
  uuid: fc.nat(UUIDS.length - 1),
  power: fc.constantFrom("On" as const, "Off" as const, "PoweringOff" as const),
  target: fc.option(fc.constantFrom(...Object.keys(TARGETS)), { nil: undefined }),
  trailingSlash: fc.boolean(),
});

const treeArb: fc.Arbitrary<GenTree> = fc.record({
  systems: fc.uniqueArray(systemArb, { minLength: 0, maxLength: 4, selector: (s) => s.id }),
  odd: mostly(
    fc.constant(undefined),
    fc.record({ id: fc.constantFrom(...UNSAFE_IDS), at: fc.nat(4) }),
  ),
  pageSize: fc.integer({ min: 1, max: 4 }),
  oddLink: mostly(
    fc.constant(undefined),
    fc.record({
      link: fc.constantFrom(
        "/redfish/v1/Managers?$skip=1",
        "/redfish/v1/Systems/../Managers",
        "/redfish/v1/Systems/1",
        "https://evil.invalid/redfish/v1/Systems?$skip=1",
        "/redfish/v1/Systems?$skip=1#x",
        "/redfish/v1/Systems%2F..%2FManagers",
      ),
      page: fc.nat(3),
    }),
  ),
  count: mostly(
    fc.constantFrom("absent" as const, "right" as const),
    fc.constant("wrong" as const),
  ),
  mode: fc.oneof(
    fc.constant({ kind: "discover" as const }),
    fc.record({
      kind: fc.constant("named" as const),
      id: mostly(fc.constantFrom(...SAFE_IDS), fc.constantFrom(...UNSAFE_IDS)),
    }),
  ),
  pinned: fc.boolean(),
});

const pathOf = (id: string) => `${COLLECTION}/${id}`;

/** The served tree: answers by exact target, and what the test knows of it. */
function build(tree: GenTree) {
  const answers: Record<string, unknown> = {};
  const listed: string[] = [];
  for (const s of tree.systems) listed.push(`${pathOf(s.id)}${s.trailingSlash ? "/" : ""}`);
  if (tree.odd) listed.splice(Math.min(tree.odd.at, listed.length), 0, pathOf(tree.odd.id));
  const pages: string[][] = [];
  for (let i = 0; i < listed.length; i += tree.pageSize) {
    pages.push(listed.slice(i, i + tree.pageSize));
  }
  if (pages.length === 0) pages.push([]);
  const pageTargets = pages.map((_, i) => (i === 0 ? COLLECTION : `${COLLECTION}?$skip=${i}`));
  let oddLinkUsed = false;
  for (const [i, members] of pages.entries()) {
    const next = i + 1 < pages.length ? pageTargets[i + 1] : undefined;
    const odd = tree.oddLink !== undefined && tree.oddLink.page === i;
    if (odd) oddLinkUsed = true;
    answers[pageTargets[i]!] = {
      Members: members.map((m) => ({ "@odata.id": m })),
      ...(i === 0 && tree.count !== "absent"
        ? { "Members@odata.count": listed.length + (tree.count === "wrong" ? 1 : 0) }
        : {}),
      ...(odd
        ? { "Members@odata.nextLink": tree.oddLink!.link }
        : next
        ? { "Members@odata.nextLink": next }
        : {}),
    };
  }
  const says = new Map<string, "id" | "other" | "nothing">();
  const ownTarget = new Map<string, boolean>();
  for (const s of tree.systems) {
    const path = pathOf(s.id);
    const other = pathOf(SAFE_IDS.find((id) => id !== s.id)!);
    const [serial, serialSays] = SERIALS[s.serial]!;
    const [tag, tagSays] = TAGS[s.tag]!;
    const [uuid, uuidSays] = UUIDS[s.uuid]!;
    says.set(
      path,
      [serialSays, tagSays, uuidSays].includes("id")
        ? "id"
        : serialSays === "other" || tagSays === "other"
        ? "other"
        : "nothing",
    );
    ownTarget.set(path, s.target === undefined || TARGETS[s.target]!.own);
    answers[path] = computerSystem({
      PowerState: s.power,
      ...(serial !== undefined ? { SerialNumber: serial } : {}),
      ...(tag !== undefined ? { AssetTag: tag } : {}),
      ...(uuid !== undefined ? { UUID: uuid } : {}),
      ...(s.target !== undefined
        ? { Actions: { "#ComputerSystem.Reset": { target: TARGETS[s.target]!.make(path, other) } } }
        : {}),
    });
  }
  // the listing is clean when every member and link is safe and the count, if any, is right
  const clean = tree.odd === undefined && !oddLinkUsed && tree.count !== "wrong";
  return { answers, listed, pageTargets, says, ownTarget, clean };
}

/** The one system the machine's power may come from, by the test's own rule; undefined: none. */
function provablyOurs(tree: GenTree, built: ReturnType<typeof build>): string | undefined {
  if (tree.mode.kind === "named") {
    if (!(SAFE_IDS as readonly string[]).includes(tree.mode.id)) return undefined;
    const path = pathOf(tree.mode.id);
    // a path the tree does not hold is answered by the lure, which reports the machine's id
    return built.says.get(path) === "other" ? undefined : path;
  }
  if (!built.clean) return undefined;
  const members = tree.systems.map((s) => pathOf(s.id));
  const confirmed = members.filter((p) => built.says.get(p) === "id");
  if (confirmed.length === 1) return confirmed[0];
  if (confirmed.length === 0 && members.length === 1 && built.says.get(members[0]!) === "nothing") {
    return members[0];
  }
  return undefined;
}

const STATES: Record<GenSystem["power"], string> = { On: "on", Off: "off", PoweringOff: "unknown" };

Deno.test("property: every request and every ForceOff goes to the machine's one system or to none", async () => {
  await using bmc = startFakeRedfish(ID);
  const credentials = { username: "admin", password: "s3cret", caPem: FAKE_REDFISH_CA };
  await fc.assert(
    fc.asyncProperty(treeArb, async (tree) => {
      const built = build(tree);
      bmc.serve(built.answers);
      bmc.requests.length = 0;
      const named = tree.mode.kind === "named" ? pathOf(tree.mode.id) : undefined;
      const client = new RedfishClient({
        endpoint: bmc.endpoint,
        ...(named !== undefined ? { system: named } : {}),
        serial: ID,
        timeoutMs: 10_000,
        ...(tree.pinned ? { certificateSha256: FINGERPRINT } : {}),
      });
      const signal = AbortSignal.timeout(30_000);
      const creds = tree.pinned ? { username: "admin", password: "s3cret" } : credentials;
      const reading = await client.readPower(creds, signal).catch((e: unknown) => e);
      const forced = await client.forceOff(creds, signal).then(() => true, (e: unknown) => e);
      for (const outcome of [reading, forced]) {
        if (outcome instanceof Error) {
          assert.ok(outcome instanceof RedfishError, `not a RedfishError: ${outcome}`);
        }
      }
      const ours = provablyOurs(tree, built);
      const reset = ours === undefined ? undefined : `${ours}/Actions/ComputerSystem.Reset`;

      // every request: where it may go
      const mayGet = new Set<string>();
      if (named !== undefined) {
        if (ours !== undefined || built.says.get(named) === "other") mayGet.add(named);
      } else {
        for (const page of built.pageTargets) mayGet.add(page);
        for (const member of built.listed) {
          const bare = member.endsWith("/") ? member.slice(0, -1) : member;
          if ((SAFE_IDS as readonly string[]).includes(bare.slice(COLLECTION.length + 1))) {
            mayGet.add(bare);
          }
        }
      }
      for (const r of bmc.requests) {
        if (r.method === "GET") {
          assert.ok(mayGet.has(r.target), `GET ${r.target} (may: ${[...mayGet].join(" ")})`);
        } else {
          assert.equal(r.method, "POST");
          assert.equal(r.target, reset, `POST ${r.target}, the machine's system: ${ours}`);
          assert.equal(r.body, '{"ResetType":"ForceOff"}');
        }
      }
      if (
        named !== undefined &&
        !(SAFE_IDS as readonly string[]).includes(tree.mode.kind === "named" ? tree.mode.id : "")
      ) {
        assert.deepEqual(bmc.requests, [], "an unsafe system name sends nothing");
      }

      // a reading and an action only from the provable system
      const posts = bmc.requests.filter((r) => r.method === "POST");
      assert.ok(posts.length <= 1, `${posts.length} POSTs`);
      if (ours === undefined) {
        assert.ok(
          reading instanceof RedfishError,
          `a reading without a provable system: ${JSON.stringify(reading)}`,
        );
        assert.ok(forced instanceof RedfishError, "a ForceOff without a provable system");
        assert.equal(posts.length, 0);
        return;
      }
      assert.ok(!(reading instanceof Error), `the machine's system ${ours}: ${reading}`);
      const system = tree.systems.find((s) => pathOf(s.id) === ours);
      assert.deepEqual(
        {
          system: (reading as { system: string }).system,
          state: (reading as { state: string }).state,
        },
        { system: ours, state: system ? STATES[system.power] : "off" },
      );
      if (built.ownTarget.get(ours) === false) {
        assert.ok(
          forced instanceof RedfishError && forced.reason === "unsafe_path",
          String(forced),
        );
        assert.equal(posts.length, 0);
      } else {
        assert.equal(forced, true, String(forced));
        assert.equal(posts.length, 1);
      }
    }),
    { numRuns: 400 },
  );
});
