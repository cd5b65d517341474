/**
 * A Redfish server for unit tests: HTTPS on loopback (the server tests' certificate, signed by
 * their CA), HTTP/1.1 parsed by hand so every request's target is recorded exactly as it arrived
 * (no framework resolves `..` or decodes `%2F` first), one request per connection.
 *
 * It answers from a map of exact targets. A target that is not in the map is answered as a
 * careless server would: resolved (dot segments, percent-decoding) and looked up again; and any
 * other GET gets a ComputerSystem that says `Off` and reports `lureSerial` as its SerialNumber, so
 * a client that strays from its system reads a plausible answer, not an error. Every POST is
 * accepted (204).
 *
 * @module
 */

const TESTDATA = new URL("../../../server/testdata/", import.meta.url);

/** The CA that signed the server's certificate (the client's `caPem`). */
export const FAKE_REDFISH_CA = Deno.readTextFileSync(new URL("ca.pem", TESTDATA));

/** One request as received. */
export interface ReceivedRequest {
  method: string;
  /** The request-target, byte for byte. */
  target: string;
  body: string;
}

/** A running fake. */
export interface FakeRedfish extends AsyncDisposable {
  /** `https://127.0.0.1:<port>`. */
  endpoint: string;
  /** Every request so far, in order. */
  requests: ReceivedRequest[];
  /** Replaces the answers (exact targets → JSON bodies). */
  serve(answers: Record<string, unknown>): void;
  close(): Promise<void>;
}

/** A ComputerSystem body. */
export function computerSystem(
  fields: Record<string, unknown> & { PowerState?: unknown },
): Record<string, unknown> {
  return { "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem", ...fields };
}

/**
 * Starts the fake.
 * @param lureSerial the SerialNumber of the answer to a GET of an unknown path
 * @returns the fake; close it (or `await using`)
 */
export function startFakeRedfish(lureSerial = "lure"): FakeRedfish {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: Deno.readTextFileSync(new URL("tls_cert.pem", TESTDATA)),
    key: Deno.readTextFileSync(new URL("tls_key.pem", TESTDATA)),
  });
  const requests: ReceivedRequest[] = [];
  let answers: Record<string, unknown> = {};
  const open = new Set<Deno.TlsConn>();
  const handling = new Set<Promise<void>>();

  const answer = (method: string, target: string): { status: number; body?: unknown } => {
    if (method === "POST") return { status: 204 };
    if (target in answers) return { status: 200, body: answers[target] };
    let resolved = target;
    try {
      resolved = decodeURIComponent(new URL(target, "https://fake.invalid").pathname);
      resolved = new URL(resolved, "https://fake.invalid").pathname;
    } catch { /* left as it came */ }
    if (resolved in answers) return { status: 200, body: answers[resolved] };
    return {
      status: 200,
      body: computerSystem({ PowerState: "Off", SerialNumber: lureSerial }),
    };
  };

  const handle = async (conn: Deno.TlsConn) => {
    open.add(conn);
    try {
      const decoder = new TextDecoder();
      let text = "";
      const buffer = new Uint8Array(16 * 1024);
      let head = -1;
      while (head < 0) {
        const n = await conn.read(buffer);
        if (n === null) return;
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
        head = text.indexOf("\r\n\r\n");
      }
      const [requestLine, ...headers] = text.slice(0, head).split("\r\n");
      const length = Number(
        headers.find((h) => /^content-length:/i.test(h))?.split(":")[1]?.trim() ?? "0",
      );
      while (text.length - head - 4 < length) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
      }
      const [method = "", target = ""] = (requestLine ?? "").split(" ");
      requests.push({ method, target, body: text.slice(head + 4, head + 4 + length) });
      const { status, body } = answer(method, target);
      const payload = body === undefined ? "" : JSON.stringify(body);
      const bytes = new TextEncoder().encode(payload);
      const reply = `HTTP/1.1 ${status} ${status === 204 ? "No Content" : "OK"}\r\n` +
        (body === undefined ? "" : "content-type: application/json\r\n") +
        `content-length: ${bytes.byteLength}\r\nconnection: close\r\n\r\n`;
      await conn.write(new TextEncoder().encode(reply));
      if (bytes.byteLength > 0) await conn.write(bytes);
    } catch {
      // the client went away
    } finally {
      open.delete(conn);
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        const done = handle(conn);
        handling.add(done);
        done.finally(() => handling.delete(done));
      }
    } catch { /* closed */ }
  })();

  const close = async () => {
    try {
      listener.close();
    } catch { /* closed */ }
    for (const conn of open) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    await accepting;
    await Promise.allSettled([...handling]);
  };
  return {
    endpoint: `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    requests,
    serve(next) {
      answers = next;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
