/**
 * A fake BIRD control socket: greets like BIRD 2.0.12 and answers each command from a table.
 *
 * @module
 */

/** A running fake; `commands` records what was sent. */
export interface FakeBird {
  path: string;
  commands: string[];
  close(): Promise<void>;
}

/**
 * Serves `replies[command]` (raw reply text, lines ending in "\n") on a unix socket.
 * @param replies command -> reply text
 */
export function fakeBird(dir: string, replies: Record<string, string>): FakeBird {
  const path = `${dir}/bird.ctl`;
  const listener = Deno.listen({ transport: "unix", path });
  const commands: string[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        const enc = new TextEncoder();
        await conn.write(enc.encode("0001 BIRD 2.0.12 ready.\n"));
        const buf = new Uint8Array(4096);
        const n = await conn.read(buf);
        const command = new TextDecoder().decode(buf.subarray(0, n ?? 0)).trim();
        commands.push(command);
        await conn.write(enc.encode(replies[command] ?? "9001 syntax error\n"));
        conn.close();
      })().catch(() => {});
    }
  })().catch(() => {});
  return {
    path,
    commands,
    close: async () => {
      listener.close();
      await serving;
    },
  };
}
