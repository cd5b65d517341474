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

/** Keelson's own arguments: what follows the binary (the root step's argv) in the agent's argv. */
function keelsonArguments(): string[] {
  for (let i = 0; i + rootStep.length <= agentArgv.length; i++) {
    if (rootStep.every((word, j) => agentArgv[i + j] === word)) {
      return agentArgv.slice(i + rootStep.length);
    }
  }
  return [];
}
const keelsonArgs = keelsonArguments();

/** The value of a flag of Keelson's command line (`--config X` or `--config=X`). */
function flag(names: string[]): string | undefined {
  for (const [i, word] of keelsonArgs.entries()) {
    if (names.includes(word)) return keelsonArgs[i + 1];
    const eq = names.find((n) => word.startsWith(`${n}=`));
    if (eq) return word.slice(eq.length + 1);
  }
  return undefined;
}

const runs = keelsonArgs[0] === "run";
const config = flag(["--config", "-c"]) ?? Deno.env.get("KEELSON_CONFIG");
const host = flag(["--host"]) ?? Deno.hostname();
/**
 * An executable named without a directory, looked up in PATH and then systemd's PATH: the caller
 * may have cleared this process's environment (a test's `clearEnv`).
 */
function executable(name: string): string {
  if (name.includes("/")) return name;
  // with an empty environment Deno sets PATH to its own node_compat_bin only: systemd's last
  const dirs = [
    ...(Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== ""),
    ..."/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".split(":"), // systemd's
  ];
  for (const dir of dirs) {
    try {
      if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
    } catch { /* not here */ }
  }
  return name;
}

/** The PATH systemd gives a service's processes. */
const SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const agent = new Deno.Command(executable(agentArgv[0]!), {
  args: agentArgv.slice(1),
  env: { PATH: SYSTEMD_PATH },
  stdin: "null",
}).spawn();
let root: Deno.ChildProcess | undefined;
if (runs && config !== undefined) {
  // as root, unchanged, but killed with this process (a test's SIGKILL), as systemd stops the unit
  root = new Deno.Command(executable("setpriv"), {
    env: { PATH: SYSTEMD_PATH },
    args: [
      "--pdeathsig=KILL",
      "--",
      ...rootStep,
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
