/**
 * A TCP proxy on loopback that can make every open connection go silent the way a vanished peer
 * does (a host powered off, a control-plane VIP that moved): the client's socket stays open,
 * whatever it sends is swallowed, nothing comes back, no FIN and no RST. Connections opened after
 * that are forwarded as usual (they reach the "new" apiserver).
 *
 * ```ts
 * await using proxy = startTcpProxy(6443);
 * // point the client at proxy.port ...
 * proxy.silence();                 // now
 * proxy.silenceOnNextRequest();    // when a client next sends bytes after the server did
 * ```
 *
 * @module
 */

interface Pair {
  client: Deno.TcpConn;
  upstream: Deno.TcpConn;
  silent: boolean;
}

/** A running proxy. */
export class TcpProxy implements AsyncDisposable {
  readonly #listener: Deno.TcpListener;
  readonly #target: number;
  readonly #pairs = new Set<Pair>();
  readonly #tasks = new Set<Promise<void>>();
  #armed = false;
  #armedSawServer = false;
  #silencedAt: number | undefined;
  #closed = false;

  /** @internal use `startTcpProxy` */
  constructor(target: number) {
    this.#target = target;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#track(this.#accept());
  }

  /** The port clients connect to. */
  get port(): number {
    return this.#listener.addr.port;
  }

  /** Connections forwarded now (not silent). */
  get open(): number {
    return [...this.#pairs].filter((p) => !p.silent).length;
  }

  /** `performance.now()` of the last silence, once it happened. */
  get silencedAt(): number | undefined {
    return this.#silencedAt;
  }

  /**
   * Silences every connection open now.
   * @returns how many went silent
   */
  silence(): number {
    let count = 0;
    for (const pair of this.#pairs) {
      if (pair.silent) continue;
      pair.silent = true;
      // the apiserver side is closed (it is "gone"); the client side is kept open and mute
      try {
        pair.upstream.close();
      } catch {
        // already closed
      }
      count++;
    }
    this.#silencedAt = performance.now();
    return count;
  }

  /**
   * Silences every open connection at the moment a client sends bytes after the server has sent
   * some (e.g. the client reacting to a watch event): that request is then in flight on a dead
   * connection. Its bytes are swallowed.
   */
  silenceOnNextRequest(): void {
    this.#armed = true;
    this.#armedSawServer = false;
  }

  async #accept(): Promise<void> {
    while (!this.#closed) {
      let client: Deno.TcpConn;
      try {
        client = await this.#listener.accept();
      } catch {
        return;
      }
      let upstream: Deno.TcpConn;
      try {
        upstream = await Deno.connect({ hostname: "127.0.0.1", port: this.#target });
      } catch {
        client.close();
        continue;
      }
      const pair: Pair = { client, upstream, silent: false };
      this.#pairs.add(pair);
      this.#track(this.#pump(pair, "up"));
      this.#track(this.#pump(pair, "down"));
    }
  }

  async #pump(pair: Pair, direction: "up" | "down"): Promise<void> {
    const from = direction === "up" ? pair.client : pair.upstream;
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buffer);
        if (n === null) break;
        if (pair.silent) {
          if (direction === "up") continue; // swallow what the client sends
          break;
        }
        if (this.#armed) {
          if (direction === "down") this.#armedSawServer = true;
          else if (this.#armedSawServer) {
            this.#armed = false;
            this.silence();
            continue;
          }
        }
        const to = direction === "up" ? pair.upstream : pair.client;
        let written = 0;
        while (written < n) written += await to.write(buffer.subarray(written, n));
      }
    } catch {
      // a closed socket ends the pump
    }
    if (pair.silent && direction === "down") return; // keep the client's socket open and mute
    if (pair.silent && direction === "up") {
      // the client closed its silent socket
      this.#drop(pair);
      return;
    }
    this.#drop(pair);
  }

  #drop(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    for (const conn of [pair.client, pair.upstream]) {
      try {
        conn.close();
      } catch {
        // already closed
      }
    }
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task));
  }

  /** Closes the listener and every connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listener.close();
    for (const pair of [...this.#pairs]) this.#drop(pair);
    await Promise.allSettled([...this.#tasks]);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Starts a proxy to `127.0.0.1:<target>`.
 * @param target the apiserver port
 * @returns the proxy
 */
export function startTcpProxy(target: number): TcpProxy {
  return new TcpProxy(target);
}
