/**
 * Every field of MetalLB's CRD specs (as the importer's zod schemas list them) is either mapped to
 * a Keelson key or commented in the output: the fixture sets every field, and the imported
 * inventory must show each one, as its Keelson key or in a comment naming `spec.<field>`.
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { parse } from "yaml";
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

Deno.test("every MetalLB spec field set in the fixture shows in the output: its key, or a comment", async () => {
  const source = await Deno.readTextFile(new URL("metallb.yaml", DATA));
  const nodes = (parse(await Deno.readTextFile(new URL("nodes.yaml", DATA))) as {
    items: V1Node[];
  }).items;
  const outputs = [
    importMetallb(source, { source: "metallb.yaml" }),
    importMetallb(source, { source: "metallb.yaml", nodes }),
  ].join("\n");
  const comments = outputs.split("\n").filter((l) => l.startsWith("#")).join("\n");
  const keys = new Set(
    outputs.split("\n").flatMap((l) =>
      [...l.matchAll(/(?:^|[{,] )([a-z_]+) = /g)].map((m) => m[1]!)
    ),
  );
  for (const field of fieldsOf()) {
    const [kind, ...path] = field.split(".");
    const where = METALLB_FIELDS[field]!;
    if (where === "comment") {
      assert.ok(
        comments.includes(`${kind}`) && comments.includes(`spec.${path.join(".")}`),
        `${field}: no comment names spec.${path.join(".")}`,
      );
      continue;
    }
    // "pools.addresses (+ pools.reserved)", 'pools.announce = "bgp"', "bgp.peers.hosts / …"
    const targets = where.split(" / ").map((t) => t.split(" ")[0]!.split(".").at(-1)!);
    // a mapped field whose value Keelson cannot take here (localPref toward an eBGP peer) is
    // commented instead
    const written = targets.some((t) =>
      keys.has(t) ||
      (t === "service_allocation" && /\[pools\.service_allocation\]/.test(outputs))
    );
    assert.ok(
      written || comments.includes(`spec.${path.join(".")}`),
      `${field}: mapped to ${where}, but neither that key nor a comment is written`,
    );
  }
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
