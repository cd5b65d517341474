import { parseTOML } from "toml-eslint-parser";
import { parse } from "smol-toml";
const src = Deno.readTextFileSync("tests/unit/config/source_lines_test.ts");
const text = eval(src.slice(src.indexOf("const TEXT = ") + 13, src.indexOf("`;\n") + 1));
try {
  parse(text);
  console.log("smol ok");
} catch (e) {
  console.log("smol", String(e).slice(0, 200));
}
try {
  parseTOML(text);
  console.log("tep ok");
} catch (e) {
  console.log("tep", String(e));
}
