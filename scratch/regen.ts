import { ConfigError } from "../src/config/config_error.ts";
import { parseConfig } from "../src/config/parse_config.ts";
const dir = "tests/unit/config/testdata/";
for (const name of Deno.args) {
  try {
    parseConfig(Deno.readTextFileSync(dir + name + ".toml"), name + ".toml");
  } catch (err) {
    Deno.writeTextFileSync(dir + name + ".expected", (err as ConfigError).format() + "\n");
  }
}
