/**
 * What systemd does for a shipped Keelson, for tests that run it unprivileged (there is no
 * systemd PID 1 here): starts `keelson.service`'s agent as the test user and, beside it, as root,
 * `keelson-apply.service`'s root step (`keelson apply-host-config --watch`, the same bundle with
 * the same baked flags) for the inventory and host of the agent's command line. Signals sent to
 * this process go to the agent (SIGHUP reloads it, SIGTERM stops it); when the agent exits the
 * root step is stopped and this process exits with the agent's code. Every line of both goes to
 * this process's stdout and stderr, as both units' lines go to the journal. A command other than
 * `run` (e.g. `check`) is only passed through.
 *
 * Usage: deno run -A service_manager.ts ROOT_STEP_JSON AGENT_USER -- AGENT_ARGV... [KEELSON_ARGS...]
 * ROOT_STEP_JSON is the argv that runs Keelson as root, without its own arguments.
 *
 * Self-contained (Deno APIs only): run with --no-config.
 *
 * @module
 */

const [rootStepJson, agentUser, separator, ...agentArgv] = Deno.args;
if (rootStepJson === undefined || agentUser === undefined || separator !== "--") {
  // deno-lint-ignore no-console
  console.error("usage: service_manager.ts ROOT_STEP_JSON AGENT_USER -- AGENT_ARGV...");
  Deno.exit(2);
}
const rootStep = JSON.parse(rootStepJson) as string[];

/** The value of a flag of the agent's command line (`--config X` or `--config=X`). */
function flag(names: string[]): string | undefined {
  for (const [i, word] of agentArgv.entries()) {
    if (names.includes(word)) return agentArgv[i + 1];
    const eq = names.find((n) => word.startsWith(`${n}=`));
    if (eq) return word.slice(eq.length + 1);
  }
  return undefined;
}

const runs = agentArgv.includes("run");
const config = flag(["--config", "-c"]) ?? Deno.env.get("KEELSON_CONFIG");
const host = flag(["--host"]) ?? Deno.hostname();
const agent = new Deno.Command(agentArgv[0]!, { args: agentArgv.slice(1), stdin: "null" }).spawn();
let root: Deno.ChildProcess | undefined;
if (runs && config !== undefined) {
  root = new Deno.Command(rootStep[0]!, {
    args: [
      ...rootStep.slice(1),
      "apply-host-config",
      "--watch",
      "--config",
      config,
      "--host",
      host,
      "--agent-user",
      agentUser,
    ],
    stdin: "null",
  }).spawn();
}
for (const signal of ["SIGHUP", "SIGTERM", "SIGINT"] as const) {
  Deno.addSignalListener(signal, () => {
    try {
      agent.kill(signal);
    } catch { /* gone */ }
  });
}
const status = await agent.status;
if (root) {
  try {
    root.kill("SIGTERM");
  } catch { /* gone */ }
  await root.status;
}
Deno.exit(status.code);
