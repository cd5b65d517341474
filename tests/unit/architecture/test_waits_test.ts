/**
 * How tests wait and what the unit tier may do, read from the tests' text:
 *
 * - a test waits for a condition through `pollUntil` (tests/_support/poll.ts) and watches a
 *   window where nothing may happen through `holdsFor` (the same file) or, on the API, `quietFor`
 *   (tests/integration/_harness/quiet.ts); a fixed sleep
 *   (`setTimeout` handed a bare resolve, a `sleep`/`delay` helper) passes when the awaited thing is
 *   merely slow and fails when the machine is loaded, so none is written outside tests/bench and
 *   tests/_support, except the few listed below with the reason no condition exists;
 * - no test keeps its own copy of the poll loop (a local `until`/`eventually`, a `deadline` loop);
 * - no unit test starts a process (`Deno.Command`, `deno run`): a test that runs `keelson` or
 *   another program lives in tests/integration.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { typescriptFiles } from "../../_support/typescript_files.ts";

const TESTS = fileURLToPath(new URL("../../", import.meta.url));

/** Every test file, as a path under tests/ (`unit/kube/informer_test.ts`). */
async function testFiles(): Promise<string[]> {
  const files: string[] = [];
  for await (const file of typescriptFiles(TESTS.replace(/\/$/, ""))) {
    files.push(file.slice(TESTS.length));
  }
  return files.sort();
}

/** The shapes of a fixed sleep. */
const SLEEPS: readonly RegExp[] = [
  // `new Promise((r) => setTimeout(r, ms))`: the timer's callback is the resolve itself
  /\bsetTimeout\(\s*\w+\s*,/g,
  // a sleep helper called (its definition is the first shape)
  /\bawait\s+(?:sleep|delay)\(/g,
  // the agent's own delay, imported
  /\bimport\s*\{[^}]*\bdelay\b[^}]*\}\s*from/g,
];

/** The shapes of a hand-written poll loop beside pollUntil. */
const POLL_LOOPS: readonly RegExp[] = [
  /\b(?:function|const|let)\s+(?:until|eventually|waitUntil)\b/g,
  /\b(?:const|let)\s+\w*[dD]eadline\w*\s*=\s*(?:Date|performance)\.now\(\)/g,
  /\b(?:while|for)\s*\([^)]*(?:Date|performance)\.now\(\)/g,
];

/** The shapes of starting a process. */
const PROCESSES: readonly RegExp[] = [
  /\bDeno\.Command\b/g,
  /\bDeno\.execPath\(\)/g,
  /\bDeno\.run\(/g,
  /["'`]deno run\b/g,
  /\bnode:child_process\b/g,
];

/**
 * Fixed sleeps that stay, per file: each waits where no condition can be observed (an emulated
 * periodic process, real time that must pass for a clock-based rule).
 */
const SLEEPS_ALLOWED: Record<string, { count: number; why: string }> = {
  // emulated periodic processes: the interval is what they emulate
  "integration/_harness/kubelet.ts": {
    count: 3,
    why: "kubelet renews its Lease every interval, from a random phase",
  },
  "integration/status_clock_skew_test.ts": { count: 1, why: "a host renewing every 2 s" },
  "integration/status_retired_test.ts": { count: 1, why: "hosts renewing every second" },
  "unit/_fakes/root_step.ts": { count: 1, why: "keelson-apply.service's loop, every 10 ms" },
  // a span of real time is the scenario or the measurement
  "integration/kube_client_test.ts": {
    count: 2,
    why: "an apiserver stopped for 10 s; a watch idle for 90 s",
  },
  "integration/log_output_test.ts": {
    count: 2,
    why: "CPU and RSS are measured over a fixed window (its helper and its one use)",
  },
  "integration/power_loss_test.ts": {
    count: 1,
    why: "a random pause puts the power loss at any phase of the pod collector's 20 s period",
  },
  "e2e/control_plane_vip_test.ts": {
    count: 2,
    why: "a random pause within the probe period; after a restore the VIP may move back or " +
      "stay, and a move passes through states no window may forbid",
  },
  "unit/kube/kube_client_test.ts": {
    count: 1,
    why: "the watch's events are paced 50 ms apart: the spacing is the scenario",
  },
  "unit/controllers/out_of_service/out_of_service_controller_test.ts": {
    count: 5,
    why: "each step of the fake clock lets real time pass too, so a loop on the real clock " +
      "would show (the import of delay and its two uses, two clock-stepping loops)",
  },
  // something settles that gives no sign of it
  "e2e/_keepalived_lab.ts": { count: 1, why: "the lab's sleep, for the e2e entries here" },
  "e2e/keepalived_test.ts": {
    count: 3,
    why: "keepalived's remaining preemptions end without a sign; `ip monitor` says " +
      "nothing when it starts listening",
  },
  "e2e/keepalived_withdraw_test.ts": {
    count: 1,
    why: "keepalived's preemptions after the first placement end without a sign",
  },
  "integration/client_budgets_test.ts": {
    count: 1,
    why: "the informers' start-up requests end without a sign the test can read",
  },
  "integration/files/read_input_file_test.ts": {
    count: 1,
    why: "the abandoned read closes the late file on a thread the test cannot see",
  },
  "integration/config/reloader_test.ts": {
    count: 4,
    why: "Deno.watchFs says nothing when it starts watching (three starts, one FIFO opened)",
  },
  "integration/metrics/registry_test.ts": {
    count: 1,
    why: "the event-loop lag a scrape schedules is measured by a timer of its own",
  },
  "integration/operator_files_test.ts": {
    count: 1,
    why: "a /dev/zero token file is refused as the FIFO before it was: nothing changes to see",
  },
  "integration/providers/baremetal/keepalived/notify_fifo_test.ts": {
    count: 1,
    why: "the pause makes the junk bytes a read of their own",
  },
  "integration/watch_abort_test.ts": {
    count: 1,
    why: "a watch says nothing when it is established and no event has come",
  },
};

/** Every match of `patterns` in `text`, as `line: match`, comment lines left out. */
function matches(text: string, patterns: readonly RegExp[]): string[] {
  const code = text.replace(/^[ \t]*(?:\*|\/\/|\/\*).*$/gm, "");
  return patterns.flatMap((pattern) =>
    [...code.matchAll(pattern)].map((m) => `${code.slice(0, m.index).split("\n").length}: ${m[0]}`)
  );
}

/**
 * Outside the rules: the guards, whose self-tests hold the shapes they look for, and the API
 * window of quietFor (it needs the control plane's harness, so it lives beside it).
 */
const HELPERS = [
  "unit/architecture/test_waits_test.ts",
  "unit/architecture/unit_tier_test.ts",
  "integration/_harness/quiet.ts",
];

/** Whether a file is outside the rules: the benchmarks, the one helper folder, this guard. */
function exempt(file: string): boolean {
  return file.startsWith("bench/") || file.startsWith("_support/") || HELPERS.includes(file);
}

Deno.test("tests hold no fixed sleep outside tests/bench and tests/_support", async () => {
  const files = (await testFiles()).filter((f) => !exempt(f));
  assert.ok(files.length > 200, `the scan found the tests (${files.length})`);
  const found: string[] = [];
  for (const file of files) {
    const hits = matches(await Deno.readTextFile(`${TESTS}${file}`), SLEEPS);
    const allowed = SLEEPS_ALLOWED[file]?.count ?? 0;
    if (hits.length > allowed) found.push(...hits.map((hit) => `tests/${file}:${hit}`));
    // an allowance shrinks with the sleeps it allows
    if (hits.length < allowed) {
      found.push(`tests/${file}: ${hits.length} sleeps, ${allowed} allowed`);
    }
  }
  for (const file of Object.keys(SLEEPS_ALLOWED)) {
    if (!files.includes(file)) found.push(`tests/${file}: allowed sleeps, but no such file`);
  }
  assert.deepEqual(found, [], "wait with pollUntil, holdsFor or quietFor (tests/_support)");
});

Deno.test("tests keep no local copy of the poll loop", async () => {
  const found: string[] = [];
  for (const file of (await testFiles()).filter((f) => !exempt(f))) {
    for (const hit of matches(await Deno.readTextFile(`${TESTS}${file}`), POLL_LOOPS)) {
      found.push(`tests/${file}:${hit}`);
    }
  }
  assert.deepEqual(found, [], "use pollUntil (tests/_support/poll.ts)");
});

Deno.test("no unit test starts a process", async () => {
  const files = (await testFiles()).filter((f) => f.startsWith("unit/") && !exempt(f));
  assert.ok(files.length > 150, `the scan found the unit tests (${files.length})`);
  const found: string[] = [];
  for (const file of files) {
    for (const hit of matches(await Deno.readTextFile(`${TESTS}${file}`), PROCESSES)) {
      found.push(`tests/${file}:${hit}`);
    }
  }
  assert.deepEqual(found, [], "move these to tests/integration");
});

Deno.test("the guard sees each shape of a sleep, a poll loop and a process", () => {
  const sleeps = [
    "await new Promise((resolve) => setTimeout(resolve, 1500));",
    "await new Promise((r) => setTimeout(r, 0));",
    "const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));",
    "const sleep = (ms: number) => { slept.push(ms); }; // a fake: no time passes",
    'import { delay } from "../../src/kube/delay.ts";',
    "await sleep(1000); // no second holder appears",
    "const timer = setTimeout(() => controller.abort(), 100); // a bound, not a sleep",
    "// await new Promise((r) => setTimeout(r, 10)); a comment",
  ].join("\n");
  assert.equal(matches(sleeps, SLEEPS).length, 5);
  const loops = [
    "async function until(check: () => boolean): Promise<void> {",
    "const eventually = async () => {};",
    "const deadline = Date.now() + 5000;",
    "while (performance.now() - start < WATCH_MS) {",
    'await pollUntil("the VIP", probe);',
  ].join("\n");
  assert.equal(matches(loops, POLL_LOOPS).length, 4);
  const processes = [
    'new Deno.Command(Deno.execPath(), { args: ["run", "main.ts"] })',
    'const cmd = ["deno run -A main.ts"];',
    'import { spawn } from "node:child_process";',
  ].join("\n");
  assert.equal(matches(processes, PROCESSES).length, 4);
});
