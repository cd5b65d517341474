/**
 * `keelson version`.
 *
 * @module
 */
import { VERSION } from "../version.ts";
import { print } from "./output.ts";
import { parseFlags } from "./usage_error.ts";

/** Prints the version and the runtime's. */
export function versionCommand(args: string[]): Promise<number> {
  const { values } = parseFlags(args, { help: { type: "boolean", short: "h" } });
  if (values.help) {
    print("Usage: keelson version\n\nPrints Keelson's version and the Deno runtime it runs on.");
    return Promise.resolve(0);
  }
  print(`keelson ${VERSION} (deno ${Deno.version.deno}, ${Deno.build.target})`);
  return Promise.resolve(0);
}
