/**
 * `keelson render NAME`: prints the file one of the provider's announcers would keep on one host
 * once the agent has converged on a cluster snapshot. The announcers, their help texts and the
 * flags each takes beyond `--config`, `--state` and `--host` are the built-in providers' own
 * (`ProviderRegistry.hostFileCommands`); the provider the inventory names renders the text
 * (`renderHostFile`) with the pipeline its running announcer applies, fed from the snapshot
 * instead of the caches. Offline: it talks to no cluster and writes nothing.
 *
 * @module
 */
import type { HostFileCommand, HostFileFlag } from "../cloud/host_file.ts";
import { ProviderRegistry } from "../cloud/registry.ts";
import { registerBuiltInProviders } from "../../providers/mod.ts";
import { EXIT_OK } from "./exit_codes.ts";
import { print } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";
import { requiredFlag } from "./read_env.ts";
import { INPUT_FLAGS } from "./input_flags.ts";
import { printHostFile } from "./print_host_file.ts";

/** The flags an announcer's render may take, as node:util parseArgs reads them. */
const OPTION_FLAGS: Readonly<Record<HostFileFlag, { type: "string" } | { type: "boolean" }>> = {
  "fifo-user": { type: "string" },
  "show-secrets": { type: "boolean" },
};

/**
 * The commands of `keelson render`, one per announcer of the built-in providers.
 * @returns them, the first one's help text being `keelson render --help`'s
 */
export function renderCommands(): HostFileCommand[] {
  const registry = new ProviderRegistry();
  registerBuiltInProviders(registry);
  return registry.hostFileCommands();
}

/**
 * The flag table of one announcer's `keelson render NAME` (node:util parseArgs).
 * @param command the announcer's command
 * @returns the input flags, `--host` and its own
 */
export function renderFlags(
  command: Pick<HostFileCommand, "flags">,
): Record<string, { type: "string" } | { type: "boolean" }> {
  return {
    ...INPUT_FLAGS,
    host: { type: "string" },
    ...Object.fromEntries(command.flags.map((flag) => [flag, OPTION_FLAGS[flag]])),
  };
}

/**
 * Runs `keelson render`.
 * @param args the arguments after `render`
 * @returns 0 when the file was printed, 1 when the inputs cannot be used
 * @throws {UsageError} on a wrong command line (exit 2)
 * @example
 * ```ts
 * const code = await renderCommand([
 *   "keepalived", "--config", "keelson.toml", "--state", "state.yaml", "--host", "cp-1",
 * ]);
 * ```
 */
export async function renderCommand(args: string[]): Promise<number> {
  const commands = renderCommands();
  const named = commands.find((c) => c.announcer === args[0]);
  if (named) return await renderOne(named, args.slice(1));
  // the name may follow flags: read them as the first announcer's (whose help is render's), then
  // as the named one's
  const first = commands[0];
  if (!first) throw new UsageError("no provider built into this keelson renders a host file");
  const { values, positionals } = parseFlags(args, renderFlags(first));
  if (values.help) {
    print(first.usage);
    return EXIT_OK;
  }
  const [what] = positionals;
  const command = commands.find((c) => c.announcer === what);
  if (!command) {
    const names = commands.map((c) => `"${c.announcer}"`);
    throw new UsageError(
      what === undefined
        ? `name what to render: ${
          commands.map((c) => `"keelson render ${c.announcer}"`).join(" or ")
        }`
        : `cannot render "${what}"; the targets are ${names.join(" and ")}`,
    );
  }
  const at = args.indexOf(command.announcer);
  return await renderOne(command, [...args.slice(0, at), ...args.slice(at + 1)]);
}

/** `keelson render NAME` once NAME is known: its own flags, its help, its file. */
async function renderOne(command: HostFileCommand, args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(args, renderFlags(command));
  if (values.help) {
    print(command.usage);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const text = (value: string | boolean | undefined) =>
    typeof value === "string" ? value : undefined;
  const configFile = requiredFlag(text(values.config), "--config FILE", "KEELSON_CONFIG");
  const host = requiredFlag(text(values.host), "--host NAME", "KEELSON_HOST");
  const runAsUser = text(values["fifo-user"]);
  return await printHostFile({
    announcer: command.announcer,
    host,
    configFile,
    ...(runAsUser !== undefined ? { runAsUser } : {}),
    ...(command.flags.includes("show-secrets")
      ? { showSecrets: values["show-secrets"] === true }
      : {}),
  }, text(values.state));
}
