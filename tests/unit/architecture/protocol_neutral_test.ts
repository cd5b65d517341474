/**
 * Guards of what the parts outside `providers/` may know of the provider's daemons and records:
 * the heartbeat and `keelson status` speak of announcers, never of keepalived, and of an
 * announcement's state in neutral words, never VRRP's (older reports' fields are read and written
 * in one file, for mixed-version clusters), and the annotation naming
 * a Service's pool is the provider's own, the command line takes the announcers' names and help
 * from the provider, and one rule says when a power Off is confirmed.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { codeOfFiles, filesMatching } from "../../_support/typescript_files.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

const sources = (dir: string) => codeOfFiles(dir, ROOT);
const using = filesMatching;

Deno.test("the heartbeat and the status read and write no keepalived field but in the one file for older reports", async () => {
  const files = new Map([
    ...await sources("src/status"),
    ...[...await sources("src/agent")].filter(([path]) => path === "src/agent/heartbeat.ts"),
  ]);
  assert.ok(files.has("src/agent/heartbeat.ts") && files.has("src/status/cluster_status.ts"));
  assert.deepEqual(using(files, /keepalived/i), ["src/status/legacy_report_fields.ts"]);
  // the heartbeat states no daemon's words for a role: the report's schema owns them
  assert.doesNotMatch(files.get("src/agent/heartbeat.ts")!, /"MASTER"|"BACKUP"/);
});

Deno.test("VRRP's words for a state are spoken only by the keepalived provider and the one file for older reports", async () => {
  const files = new Map([...await sources("src"), ...await sources("providers")]);
  assert.ok(files.has("src/status/host_report.ts") && files.has("src/agent/heartbeat.ts"));
  const vrrpWords = /\b(MASTER|BACKUP)\b/;
  const speakers = using(files, vrrpWords);
  // the guard sees them where they belong
  assert.ok(speakers.includes("providers/baremetal/keepalived/vrrp_state.ts"), speakers.join());
  assert.ok(speakers.includes("src/status/legacy_report_fields.ts"), speakers.join());
  assert.deepEqual(
    speakers.filter((path) =>
      !path.startsWith("providers/baremetal/keepalived/") &&
      path !== "src/status/legacy_report_fields.ts"
    ),
    [],
  );
  // the report's own words are the contract's roles, not a daemon's
  const report = files.get("src/status/host_report.ts")!;
  assert.match(
    report,
    /ANNOUNCEMENT_STATES = \["holding", "standby", "failed", "stopped", "unknown"\]/,
  );
  assert.doesNotMatch(report, /"fifo"/);
});

Deno.test("the status tells the control-plane VIP by what an announcement serves, not by a daemon's instance names", async () => {
  const files = new Map([...await sources("src"), ...await sources("providers")]);
  const namers = using(files, /keelson_cp_v|keelson_v\[?46/);
  assert.ok(namers.includes("providers/baremetal/keepalived/model.ts"), namers.join());
  assert.deepEqual(
    namers.filter((path) =>
      !path.startsWith("providers/baremetal/keepalived/") &&
      path !== "src/status/legacy_report_fields.ts"
    ),
    [],
  );
});

Deno.test("the pool annotation is spelled only by the provider", async () => {
  const files = await sources("src");
  assert.ok(files.size > 100, `${files.size} files read`);
  assert.deepEqual(using(files, /allocated-from-pool/), []);
  const provider = await sources("providers");
  assert.deepEqual(using(provider, /"keelson\.io\/allocated-from-pool"/), [
    "providers/baremetal/ipam/service_requests.ts",
  ]);
});

Deno.test("one rule says when a power Off is confirmed", async () => {
  const files = new Map([...await sources("src"), ...await sources("providers")]);
  // the rule's arithmetic (first Off plus the period; answers in a row) lives in one file
  const rule = /sinceMs \+ [\w.]*confirmOffMs|streak >= 2|answeredAtMs[^;\n]*< *confirm/;
  assert.deepEqual(using(files, rule), ["src/cloud/power_confirmation.ts"]);
  assert.deepEqual(using(files, /offConfirmation\(/), [
    "providers/baremetal/power/power_monitor.ts",
    "src/cloud/power_confirmation.ts",
    "src/controllers/out_of_service/decide_out_of_service.ts",
    "src/controllers/out_of_service/decide_power_loss.ts",
  ]);
});

Deno.test("the command line names no announcer: the provider describes its host files", async () => {
  const files = await sources("src/cli");
  assert.ok(files.has("src/cli/render.ts") && files.has("src/cli/apply_host_config.ts"));
  assert.deepEqual(using(files, /["'`]bird["'`]|["'`]keepalived["'`]/), []);
});
