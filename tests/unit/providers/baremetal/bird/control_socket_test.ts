import assert from "node:assert/strict";
import {
  birdCommand,
  BirdSocketError,
  parseProtocols,
} from "../../../../../providers/baremetal/bird/control_socket.ts";
import { fakeBird } from "./_fake_bird.ts";

const SHOW = [
  "2002-Name       Proto      Table      State  Since         Info",
  "1002-device1    Device     ---        up     2026-11-24 10:30:44.574  ",
  "1002-keelson_peer_0 BGP        ---        up     2026-11-24 10:30:44.574  Established   ",
  "1006-  BGP state:          Established",
  "       Neighbor address: 10.0.0.1",
  "       Channel ipv4",
  "         Routes:         0 imported, 3 exported, 0 preferred",
  "       Channel ipv6",
  "         Routes:         0 imported, 1 exported, 0 preferred",
  "1002-keelson_peer_1 BGP        ---        start  2026-11-24 10:30:44.574  Active        Socket: Connection refused",
  "1006-  BGP state:          Active",
  "0000 ",
  "",
].join("\n");

Deno.test("birdCommand() reads a multi-line reply and parseProtocols() finds Keelson's sessions", async () => {
  const dir = await Deno.makeTempDir();
  const bird = fakeBird(dir, {
    "show protocols all": SHOW,
    "configure": "0002-Reading configuration from /x.conf\n0003 Reconfigured\n",
  });
  try {
    const reply = await birdCommand(bird.path, "show protocols all");
    assert.equal(reply.code, 0);
    const protocols = parseProtocols(reply);
    assert.deepEqual(protocols.map((p) => [p.name, p.established, p.exported]), [
      ["keelson_peer_0", true, 4],
      ["keelson_peer_1", false, 0],
    ]);
    assert.match(protocols[1]!.info, /Active/);
    const configure = await birdCommand(bird.path, "configure");
    assert.equal(configure.code, 3);
    assert.deepEqual(bird.commands, ["show protocols all", "configure"]);
  } finally {
    await bird.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("birdCommand() names the socket when BIRD is not running and refuses multi-line commands", async () => {
  await assert.rejects(() => birdCommand("/nonexistent/bird.ctl", "show status"), BirdSocketError);
  await assert.rejects(() => birdCommand("/x", "configure\nshow"), BirdSocketError);
});
