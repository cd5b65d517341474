/**
 * quietFor (tests/integration/_harness/quiet.ts), the "nothing else happens" window of the
 * integration tests, against a real apiserver: a quiet window passes, an unwanted write fails it
 * when the write comes (not at the window's end), a write it allows and a budget are counted.
 */
import assert from "node:assert/strict";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { quietFor } from "./_harness/quiet.ts";

const MAPS = "/api/v1/namespaces/default/configmaps";

integrationTest(
  "quietFor watches the API for its window and fails at the first unwanted write",
  async (t) => {
    await using cp = await startControlPlane();
    await cp.requestOk("POST", MAPS, { metadata: { name: "kept" }, data: { n: "0" } });

    await t.step("a quiet window passes and reports nothing", async () => {
      assert.deepEqual(await quietFor(cp, { what: "configmaps", paths: [MAPS], forMs: 500 }), []);
    });

    await t.step("a write late in a long window fails it when it comes", async () => {
      const began = performance.now();
      // a write scheduled 300 ms into the window
      const writing = Promise.withResolvers<void>();
      setTimeout(() => {
        cp.requestOk("PATCH", `${MAPS}/kept`, { data: { n: "1" } })
          .then(() => writing.resolve(), writing.reject);
      }, 300);
      await assert.rejects(
        () => quietFor(cp, { what: "configmaps", paths: [MAPS], forMs: 60_000 }),
        /^Error: configmaps: unwanted write 1 \(0 allowed\) in the 60000 ms window: MODIFIED default\/kept/,
      );
      await writing.promise;
      const ms = performance.now() - began;
      assert.ok(ms < 30_000, `failed ${ms.toFixed(0)} ms in, not at the window's end`);
    });

    await t.step(
      "writes that are not unwanted, or within the budget, pass and are listed",
      async () => {
        const writing = Promise.withResolvers<void>();
        setTimeout(() => {
          cp.requestOk("PATCH", `${MAPS}/kept`, { data: { n: "2" } })
            .then(() => cp.requestOk("POST", MAPS, { metadata: { name: "other" } }))
            .then(() => writing.resolve(), writing.reject);
        }, 100);
        const seen = await quietFor(cp, {
          what: "kept",
          paths: [MAPS],
          forMs: 2_000,
          unwanted: (write) => write.key === "default/kept",
          allowed: 1,
        });
        await writing.promise;
        assert.deepEqual(seen.map((w) => `${w.type} ${w.key}`), [
          "MODIFIED default/kept",
          "ADDED default/other",
        ]);
      },
    );
  },
);
