/**
 * Every field of MetalLB's CRD specs (as the importer's zod schemas list them) is either mapped to
 * a Keelson key or commented in the output: the fixture sets every field, and the imported
 * inventory must show each one: its Keelson key in the table the field maps to (the output parsed as
 * TOML, so a key of another table does not count), or a comment about an object of the field's kind
 * naming `spec.<field>` (so `spec.aggregationLengthV6` does not stand for `spec.aggregationLength`).
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { parse } from "yaml";
import { parse as parseToml } from "smol-toml";
import { z } from "zod";
import { importMetallb, METALLB_FIELDS } from "../../../src/import/metallb.ts";
import { METALLB_SPECS } from "../../../src/import/metallb_schema.ts";

const DATA = new URL("./testdata/", import.meta.url);

/** `Kind.field` for every field, nested objects (serviceAllocation) walked too. */
function fieldsOf(): string[] {
  const out: string[] = [];
  const walk = (prefix: string, schema: z.ZodType) => {
    let inner: z.ZodType = schema;
    while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) {
      inner = (inner as z.ZodOptional<z.ZodType>).unwrap();
    }
    if (!(inner instanceof z.ZodObject)) return;
    for (const [key, field] of Object.entries(inner.shape as Record<string, z.ZodType>)) {
      out.push(`${prefix}.${key}`);
      // selectors and list items are values, not settings of their own
      if (key === "serviceAllocation") walk(`${prefix}.${key}`, field);
    }
  };
  for (const [kind, schema] of Object.entries(METALLB_SPECS)) walk(kind, schema);
  return out;
}

Deno.test("every MetalLB spec field is in the mapping table, and the table names no other", () => {
  const fields = fieldsOf();
  assert.ok(fields.length > 45, `only ${fields.length} fields found: the walk is broken`);
  assert.deepEqual(fields.filter((f) => !(f in METALLB_FIELDS)), []);
  assert.deepEqual(Object.keys(METALLB_FIELDS).filter((f) => !fields.includes(f)), []);
});

/**
 * The comments about one MetalLB object or kind: a block that starts `# MetalLB <Kind>` (or
 * `# From`) and runs over the comment lines that continue it, joined into one line.
 */
function commentBlocks(output: string): string[] {
  const blocks: string[] = [];
  for (const line of output.split("\n")) {
    const text = line.startsWith("#") ? line.replace(/^#\s?/, "") : undefined;
    if (text === undefined) continue;
    if (/^(?:MetalLB |From )/.test(text) || blocks.length === 0) blocks.push(text);
    else blocks[blocks.length - 1] += ` ${text}`;
  }
  return blocks;
}

/** Every value at `path` (`bgp.peers.hold_time`) in a parsed TOML document, arrays walked. */
function valuesAt(document: unknown, path: string): unknown[] {
  let values: unknown[] = [document];
  for (const key of path.split(".")) {
    values = values
      .flatMap((v) => Array.isArray(v) ? v : [v])
      .flatMap((v) =>
        v !== null && typeof v === "object" && key in v ? [(v as Record<string, unknown>)[key]] : []
      );
  }
  return values;
}

/** Whether a mapping target (`pools.announce = "bgp"`, `bgp.peers.asn (internal)`) is written. */
function targetWritten(document: unknown, target: string): boolean {
  const [, path, value] = target.match(/^([a-z_.]+)(?: = "([^"]*)")?/) ?? [];
  if (!path) return false;
  const found = valuesAt(document, path);
  return value === undefined ? found.length > 0 : found.includes(value);
}

Deno.test("every MetalLB spec field set in the fixture shows in the output: its key in its table, or a comment about its kind", async () => {
  const source = await Deno.readTextFile(new URL("metallb.yaml", DATA));
  const nodes = (parse(await Deno.readTextFile(new URL("nodes.yaml", DATA))) as {
    items: V1Node[];
  }).items;
  // the fixture's aggregationLength is MetalLB's default (32), which Keelson does as well and
  // which needs no comment: a third import sets another
  const aggregated = source.replace("aggregationLength: 32", "aggregationLength: 28");
  assert.notEqual(aggregated, source, "the fixture sets aggregationLength: 32");
  const outputs = [
    importMetallb(source, { source: "metallb.yaml" }),
    importMetallb(source, { source: "metallb.yaml", nodes }),
    importMetallb(aggregated, { source: "metallb.yaml" }),
  ];
  const documents = outputs.map((output) => parseToml(output));
  const blocks = outputs.flatMap(commentBlocks);
  for (const field of fieldsOf()) {
    const [kind, ...path] = field.split(".");
    const spec = `spec.${path.join(".")}`;
    // a comment about this kind (`MetalLB BGPPeer "tor-a" spec.vrf = …`, or the plural for a
    // setting merged from several objects) that names the field
    const commented = blocks.some((block) =>
      block.startsWith(`MetalLB ${kind} `) || block.startsWith(`MetalLB ${kind}s `)
        ? new RegExp(`(?:^|\\s)${spec.replaceAll(".", "\\.")}(?:\\s|$)`).test(block)
        : false
    );
    const where = METALLB_FIELDS[field]!;
    if (where === "comment") {
      assert.ok(commented, `${field}: no comment about a ${kind} names ${spec}`);
      continue;
    }
    // "pools.addresses (+ pools.reserved)", 'pools.announce = "bgp"', "bgp.peers.hosts / …"; a
    // mapped field whose value Keelson cannot take here (localPref toward an eBGP peer, a
    // password not copied) is commented instead
    const written = where.split(" / ").some((target) =>
      documents.some((document) => targetWritten(document, target))
    );
    assert.ok(
      written || commented,
      `${field}: mapped to ${where}, but neither that key in its table nor a comment about a ` +
        `${kind} naming ${spec} is written`,
    );
  }
});

Deno.test("the field check looks at the field's own table and its own kind's comments", () => {
  const document = parseToml(
    '[bgp]\nasn = 1\n[[bgp.peers]]\nname = "a"\nhold_time = 9\n[[pools]]\nname = "p"\n' +
      'announce = "vrrp"\n',
  );
  assert.ok(targetWritten(document, "bgp.peers.hold_time"));
  assert.ok(!targetWritten(document, "pools.hold_time"), "another table's key");
  assert.ok(targetWritten(document, 'pools.announce = "vrrp"'));
  assert.ok(!targetWritten(document, 'pools.announce = "bgp"'), "another value");
  const blocks = commentBlocks(
    '# MetalLB BGPPeer "a" spec.vrf = "red": Keelson peers\n# from the default VRF.\n' +
      "# From spec.addresses: merged.\n",
  );
  assert.deepEqual(blocks, [
    'MetalLB BGPPeer "a" spec.vrf = "red": Keelson peers from the default VRF.',
    "From spec.addresses: merged.",
  ]);
});

Deno.test("a spec field this importer does not know is named in a comment, not dropped", () => {
  const text = importMetallb(
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [{
        apiVersion: "metallb.io/v1beta1",
        kind: "IPAddressPool",
        metadata: { name: "p" },
        spec: { addresses: ["10.1.0.0/24"], futureKnob: { x: 1 } },
      }],
    }),
    { source: "new.json" },
  );
  assert.match(
    text,
    /# MetalLB IPAddressPool "p" spec\.futureKnob = \{"x":1\}: a field this importer does not know/,
  );
});
