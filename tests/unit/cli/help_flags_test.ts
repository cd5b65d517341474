/**
 * Help text against what the code parses: for every command `dispatch` knows, every flag its
 * help names parses, every flag it parses is in its help (with the short form the table gives
 * it), `run --help` names every controller of the controller table, `import --help` offers no
 * flag that is refused, and a mistyped command or flag gets a "did you mean".
 */
import assert from "node:assert/strict";
import { CONTROLLER_TABLE } from "../../../src/agent/controller_table.ts";
import {
  APPLY_HOST_CONFIG_FLAGS,
  APPLY_HOST_CONFIG_USAGE,
} from "../../../src/cli/apply_host_config.ts";
import { CHECK_FLAGS, CHECK_USAGE } from "../../../src/cli/check.ts";
import { COMMAND_NAMES, unknownCommand } from "../../../src/cli/dispatch.ts";
import { IMPORT_FLAGS, IMPORT_USAGE, importCommand } from "../../../src/cli/import.ts";
import { PLAN_FLAGS, PLAN_USAGE } from "../../../src/cli/plan.ts";
import { renderCommands, renderFlags } from "../../../src/cli/render.ts";
import { RUN_FLAGS, RUN_USAGE } from "../../../src/cli/run_flags.ts";
import { STATUS_FLAGS, STATUS_USAGE } from "../../../src/cli/status.ts";
import { UPSTREAM_FLAGS } from "../../../src/cli/upstream_flags.ts";
import { parseFlags, UsageError } from "../../../src/cli/usage_error.ts";
import { VERSION_FLAGS, VERSION_USAGE } from "../../../src/cli/version.ts";

type FlagTable = Record<string, { type: "string" | "boolean"; short?: string }>;

interface CommandHelp {
  usage: string;
  flags: FlagTable;
  /** Flags the help names that belong elsewhere (refused upstream flags, a subcommand's). */
  namedElsewhere?: readonly string[];
}

/** Every command line `keelson` takes, by what follows `keelson`. */
const HELP: Record<string, CommandHelp> = {
  run: { usage: RUN_USAGE, flags: RUN_FLAGS, namedElsewhere: Object.keys(UPSTREAM_FLAGS) },
  check: { usage: CHECK_USAGE, flags: CHECK_FLAGS },
  plan: { usage: PLAN_USAGE, flags: PLAN_FLAGS },
  import: { usage: IMPORT_USAGE, flags: IMPORT_FLAGS },
  // render's help is the first announcer's; a help text may show the others' usage lines too
  render: {
    usage: renderCommands()[0]!.usage,
    flags: renderFlags(renderCommands()[0]!),
    namedElsewhere: renderCommands().flatMap((c) => c.flags)
      .filter((f) => !renderCommands()[0]!.flags.includes(f)),
  },
  ...Object.fromEntries(
    renderCommands().map((c) => [`render ${c.announcer}`, {
      usage: c.usage,
      flags: renderFlags(c),
      namedElsewhere: renderCommands().flatMap((o) => o.flags).filter((f) => !c.flags.includes(f)),
    }]),
  ),
  status: { usage: STATUS_USAGE, flags: STATUS_FLAGS },
  version: { usage: VERSION_USAGE, flags: VERSION_FLAGS },
  "apply-host-config": { usage: APPLY_HOST_CONFIG_USAGE, flags: APPLY_HOST_CONFIG_FLAGS },
};

/** The long flags a help text names anywhere (usage lines, flag list, prose). */
function namedFlags(usage: string): Set<string> {
  return new Set([...usage.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!));
}

/** The `-x, --long` pairs of a help text. */
function shortForms(usage: string): Map<string, string> {
  return new Map(
    [...usage.matchAll(/(?<![\w-])-([A-Za-z]), --([a-z][a-z0-9-]*)/g)].map((m) => [m[2]!, m[1]!]),
  );
}

Deno.test("every command keelson dispatches has its help checked here", () => {
  const checked = new Set(Object.keys(HELP).map((name) => name.split(" ")[0]!));
  assert.deepEqual([...checked].sort(), [...COMMAND_NAMES].sort());
});

for (const [name, { usage, flags, namedElsewhere = [] }] of Object.entries(HELP)) {
  Deno.test(`keelson ${name} --help: every flag it names parses`, () => {
    for (const flag of namedFlags(usage)) {
      if (namedElsewhere.includes(flag)) continue;
      const spec = flags[flag];
      assert.ok(spec, `keelson ${name} --help names --${flag}, which it does not parse`);
      const args = spec.type === "boolean" ? [`--${flag}`] : [`--${flag}`, "value"];
      parseFlags(args, flags);
    }
  });

  Deno.test(`keelson ${name} --help: every flag it parses is in it, with its short form`, () => {
    const named = namedFlags(usage);
    const shorts = shortForms(usage);
    for (const [flag, spec] of Object.entries(flags)) {
      assert.ok(named.has(flag), `keelson ${name} parses --${flag}, which its help does not name`);
      assert.equal(shorts.get(flag), spec.short, `keelson ${name}: the short form of --${flag}`);
    }
  });
}

Deno.test("run --help names every controller of the controller table (it lacked vip-host and out-of-service)", () => {
  const names = CONTROLLER_TABLE.map((row) => row.name);
  assert.ok(names.length >= 7, names.join(", "));
  const paragraph = RUN_USAGE.slice(RUN_USAGE.indexOf("--controllers LIST"));
  const list = paragraph.slice(0, paragraph.indexOf("(canonical upstream names"));
  for (const controller of names) {
    assert.match(list, new RegExp(`(?<![\\w-])${controller}(?![\\w-])`), controller);
  }
});

Deno.test("import --help offers no -o FILE, and -o is refused with what to do instead", async () => {
  // before: the usage lines offered [-o FILE] while -o was refused as an unknown flag
  // (its kubectl commands keep kubectl's own -o yaml)
  assert.doesNotMatch(IMPORT_USAGE, /\[-o |-o FILE|-o, /);
  for (const output of ["-o", "--output", "--output=keelson.toml"]) {
    await assert.rejects(
      importCommand(["metallb", "--from", "metallb.yaml", output, "keelson.toml"]),
      (error) => {
        assert.ok(error instanceof UsageError, String(error));
        assert.match(error.message, /the inventory goes to stdout; redirect it/);
        return true;
      },
    );
  }
});

Deno.test("a mistyped command or flag gets a did-you-mean, an unrelated one the plain refusal", () => {
  assert.equal(unknownCommand("chek"), 'keelson: unknown command "chek"; did you mean "check"?');
  assert.equal(
    unknownCommand("stauts"),
    'keelson: unknown command "stauts"; did you mean "status"?',
  );
  assert.equal(unknownCommand("deploy"), 'keelson: unknown command "deploy"');
  const refusal = (args: string[], flags: FlagTable) => {
    try {
      parseFlags(args, flags);
    } catch (error) {
      assert.ok(error instanceof UsageError);
      return error.message;
    }
    return assert.fail(`accepted ${args.join(" ")}`);
  };
  assert.equal(
    refusal(["--conifg", "x"], CHECK_FLAGS),
    'unknown flag "--conifg"; did you mean "--config"?',
  );
  assert.equal(
    refusal(["--kubconfig=x"], STATUS_FLAGS),
    'unknown flag "--kubconfig"; did you mean "--kubeconfig"?',
  );
  assert.equal(
    refusal(["--secure-prot", "10258"], RUN_FLAGS),
    'unknown flag "--secure-prot"; did you mean "--secure-port"?',
  );
  assert.equal(refusal(["--colour"], CHECK_FLAGS), 'unknown flag "--colour"');
});
