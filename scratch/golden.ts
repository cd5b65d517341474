import { ConfigError } from "../src/config/config_error.ts";
import { parseConfig } from "../src/config/parse_config.ts";
const dir = "tests/unit/config/testdata/";
for (const e of Deno.readDirSync(dir)) {
  if (!e.name.endsWith(".toml")) continue;
  let out = "";
  try {
    parseConfig(Deno.readTextFileSync(dir + e.name), e.name);
    out = "OK\n";
  } catch (err) {
    out = (err as ConfigError).format() + "\n";
  }
  const golden = Deno.readTextFileSync(dir + e.name.replace(".toml", ".expected"));
  if (out !== golden) console.log(`== ${e.name}\n--- golden\n${golden}+++ now\n${out}`);
}
