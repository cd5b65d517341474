/**
 * `keelson check`, run with the permissions baked into the binary, reads every file the inventory
 * names for the agent as the agent will, and refuses a FIFO or a device in each with file:line,
 * at once. Before, it said OK to a FIFO metrics token, a /dev/zero kubeconfig and a kubeconfig
 * whose tokenFile was a FIFO, and a /dev/zero password_file grew it by about 1.5 GB a second.
 *
 * @module
 */
import assert from "node:assert/strict";
import { compilePermissions } from "../_harness/permissions.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

async function check(inventory: string): Promise<{ code: number; out: string; ms: number }> {
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...await compilePermissions(), "main.ts", "check", "-c", inventory],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: output.code,
    out: decode(output.stdout) + decode(output.stderr),
    ms: performance.now() - started,
  };
}

const MACHINE = '[[machines]]\nname = "w-1"\ninternal_ips = ["10.0.0.21"]\n';
const BGP = `[keepalived]\nenabled = false\n\n[bgp]\nasn = 64513\n\n[[bgp.peers]]
name = "tor"\naddress = "10.0.0.1"\nasn = 64512\n`;

Deno.test("check refuses a FIFO or /dev/zero as metrics token, password_file, kubeconfig or tokenFile", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-check-files-" });
  try {
    const fifo = `${dir}/fifo`;
    assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success, "mkfifo");
    const kubeconfig = `${dir}/kubeconfig`;
    await Deno.writeTextFile(
      kubeconfig,
      "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n" +
        "clusters: [{name: c, cluster: {server: 'https://10.0.0.10:6443'}}]\n" +
        `users: [{name: u, user: {tokenFile: ${fifo}}}]\n`,
    );
    const cases: [what: string, text: string, expected: RegExp][] = [
      [
        "a FIFO metrics token",
        `[server]\nmetrics_token_file = "${fifo}"\n${MACHINE}`,
        /keelson\.toml:2: server\.metrics_token_file: cannot read ".*fifo": is not a regular file/,
      ],
      [
        "a /dev/zero password_file",
        `${BGP}password_file = "/dev/zero"\n${MACHINE}`,
        /keelson\.toml:11: bgp\.peers\[0\]\.password_file: cannot read "\/dev\/zero": is not a regular file/,
      ],
      [
        "a /dev/zero kubeconfig",
        `[kubernetes]\nkubeconfig = "/dev/zero"\n${MACHINE}`,
        /keelson\.toml:2: kubernetes\.kubeconfig: cannot read "\/dev\/zero": is not a regular file/,
      ],
      [
        "a kubeconfig whose tokenFile is a FIFO",
        `[kubernetes]\nkubeconfig = "${kubeconfig}"\n${MACHINE}`,
        /keelson\.toml:2: kubernetes\.kubeconfig: Cannot use kubeconfig .* cannot read tokenFile ".*fifo": is not a regular file/,
      ],
    ];
    for (const [what, text, expected] of cases) {
      await Deno.writeTextFile(`${dir}/keelson.toml`, text);
      const { code, out, ms } = await check(`${dir}/keelson.toml`);
      assert.equal(code, 1, `${what}: exit ${code}\n${out}`);
      assert.match(out, expected, what);
      assert.match(out, /1 problem found/, what);
      // generous: refused by its type before it is opened, not at the 5 s deadline
      assert.ok(ms < 30_000, `${what}: took ${ms} ms`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
