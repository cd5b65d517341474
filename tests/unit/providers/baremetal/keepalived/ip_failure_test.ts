/**
 * An `ip` that fails without a word (killed, or an exit code and empty stderr) still leaves a
 * reason in the error the VIP-role loop and the address check log. A fake `ip` first on PATH.
 */
import assert from "node:assert/strict";
import { readInterfaceAddresses } from "../../../../../providers/baremetal/keepalived/interface_addresses.ts";
import { observeVipRoles } from "../../../../../providers/baremetal/keepalived/vip_roles.ts";

async function withFakeIp(script: string, body: () => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-fake-ip." });
  const path = Deno.env.get("PATH") ?? "";
  try {
    await Deno.writeTextFile(`${dir}/ip`, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
    Deno.env.set("PATH", `${dir}:${path}`);
    await body();
  } finally {
    Deno.env.set("PATH", path);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("readInterfaceAddresses(): a silent failure of ip says its exit code", async () => {
  await withFakeIp("exit 2", async () => {
    await assert.rejects(
      () => readInterfaceAddresses({ interface: "ifb0" }),
      (error: Error) => {
        assert.equal(
          error.message,
          'Cannot list addresses with "ip -j addr show dev ifb0": exited 2 and printed nothing',
        );
        return true;
      },
    );
  });
});

Deno.test("observeVipRoles(): an ip killed by a signal says which", async () => {
  await withFakeIp("kill -KILL $$", async () => {
    await assert.rejects(
      () => observeVipRoles(["10.0.0.100"], { interface: "ifb0" }),
      /^Error: Cannot list addresses with "ip -j addr show dev ifb0": was killed by SIGKILL$/,
    );
  });
});

Deno.test("observeVipRoles(): output that is not ip's JSON is refused by the one reader's schema", async () => {
  await withFakeIp(`echo '{"addr_info": 3}'`, async () => {
    await assert.rejects(
      () => observeVipRoles(["10.0.0.100"], { interface: "ifb0" }),
      /^Error: ip -j addr printed JSON of an unexpected shape$/,
    );
  });
});
