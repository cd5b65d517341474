/**
 * A TCP forwarder for the e2e labs (see `forward`).
 *
 * @module
 */
/**
 * Forwards TCP from `hostname:port` to `127.0.0.1:target`: the lab's hosts reach a kube-apiserver
 * that listens on loopback in the host namespace through the management network.
 * @param hostname the address to listen on (the host's end of the management network)
 * @param port the port to listen on
 * @param target the loopback port to forward to
 * @returns what closes the listener and every forwarded connection
 */
export function forward(hostname: string, port: number, target: number): { close(): void } {
  const listener = Deno.listen({ hostname, port });
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      (async () => {
        let upstream: Deno.Conn | undefined;
        try {
          upstream = await Deno.connect({ hostname: "127.0.0.1", port: target });
          conns.add(upstream);
          await Promise.all([
            conn.readable.pipeTo(upstream.writable).catch(() => {}),
            upstream.readable.pipeTo(conn.writable).catch(() => {}),
          ]);
        } catch { /* a side closed */ }
        for (const c of [conn, upstream]) {
          if (!c) continue;
          conns.delete(c);
          try {
            c.close();
          } catch { /* closed */ }
        }
      })();
    }
  })().catch(() => {});
  return {
    close() {
      try {
        listener.close();
      } catch { /* closed */ }
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}
