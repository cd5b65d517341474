import { parseTOML } from "toml-eslint-parser";
const text = Deno.readTextFileSync("deploy/examples/keelson.toml");
const ast = parseTOML(text);
const top = ast.body[0];
for (const t of top.body) {
  if (t.type === "TOMLTable") {
    console.log(t.kind, JSON.stringify(t.resolvedKey), t.loc.start.line, t.body.length);
  } else console.log("kv", t.key.keys.map((k: any) => k.name ?? k.value), t.loc.start.line);
}
