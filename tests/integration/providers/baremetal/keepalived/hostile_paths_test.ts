/**
 * The files keepalived's side reads back at paths the inventory names (`[keepalived] config_file`,
 * `pid_file`) go through the bounded reader: a FIFO or a device there is not read, so an apply
 * ends instead of hanging on it (before: a FIFO pid file blocked the apply, and every later one,
 * for good; /dev/zero grew the process without bound).
 */
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { KeepalivedApplier } from "../../../../../providers/baremetal/keepalived/config_applier.ts";

Deno.test("KeepalivedApplier.apply() ends when its pid file or config file is a FIFO or /dev/zero", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keelson-applier-" });
  try {
    await Deno.mkdir(`${dir}/conf.d`);
    const fifo = `${dir}/keepalived.pid`;
    assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success, "mkfifo");
    assert.ok(
      (await new Deno.Command("mkfifo", { args: [`${dir}/conf.d/keelson.conf`] }).output()).success,
    );
    for (const pidFile of [fifo, "/dev/zero"]) {
      const applier = new KeepalivedApplier({
        configFile: `${dir}/conf.d/keelson.conf`,
        checkCommand: ["true"],
        pidFile,
        debounceMs: 0,
        registry: new Registry(),
        processName: "sh",
      });
      const text = `vrrp_instance ${pidFile === fifo ? "a" : "b"} {}\n`;
      const result = await Promise.race([
        applier.apply(text),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 10_000)),
      ]);
      assert.ok(result, `apply() with pid file ${pidFile} did not end`);
      assert.equal(result.reloaded, false);
      // the FIFO in the config file's place was replaced by the rendered file
      assert.equal(await Deno.readTextFile(`${dir}/conf.d/keelson.conf`), text);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
