/**
 * BIRD's control socket, spoken directly (no `birdc` process): one connection per command, a
 * deadline on each, and the reply parsed by its 4-digit codes (`doc/reply_codes`): a line is
 * `NNNN-text` (more follow), `NNNN text` (last) or ` text` (continuation of the previous code).
 *
 * @module
 */

/** One parsed reply. */
export interface BirdReply {
  /** Code of the last line: 0 for a table's end, 3 "Reconfigured", 8xxx/9xxx errors. */
  code: number;
  /** Every line with its code (continuations carry the code of the line they continue). */
  lines: { code: number; text: string }[];
}

/** An error talking to BIRD (socket missing, permission, timeout, malformed reply). */
export class BirdSocketError extends Error {
  /** @param message what failed, naming the socket */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BirdSocketError";
  }
}

/**
 * Sends one command and reads its whole reply.
 * @param socket the control socket path
 * @param command one line, e.g. `configure` or `show protocols all`
 * @param timeoutMs deadline of the connect, the command and the reply together
 * @returns the reply
 * @throws {BirdSocketError} when the socket cannot be used or the reply does not end in time
 */
export async function birdCommand(
  socket: string,
  command: string,
  timeoutMs = 5000,
): Promise<BirdReply> {
  if (/[\r\n]/.test(command)) throw new BirdSocketError("A BIRD command is one line");
  let conn: Deno.UnixConn;
  try {
    conn = await Deno.connect({ transport: "unix", path: socket });
  } catch (error) {
    throw new BirdSocketError(`Cannot connect to BIRD's control socket ${socket}: ${error}`, {
      cause: error,
    });
  }
  const timer = setTimeout(() => conn.close(), timeoutMs);
  const lines: BirdReply["lines"] = [];
  let sent = false;
  try {
    const decoder = new TextDecoder();
    let buffer = "";
    let lastCode = 0;
    const chunk = new Uint8Array(65536);
    while (true) {
      const n = await conn.read(chunk);
      if (n === null) throw new BirdSocketError(`BIRD closed ${socket} before the reply ended`);
      buffer += decoder.decode(chunk.subarray(0, n), { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const match = /^(\d{4})([ -])(.*)$/.exec(line);
        if (match) {
          lastCode = Number(match[1]);
          const final = match[2] === " ";
          if (!sent) {
            // the greeting "0001 BIRD x.y.z ready."
            if (final) {
              await conn.write(new TextEncoder().encode(command + "\n"));
              sent = true;
            }
            continue;
          }
          lines.push({ code: lastCode, text: match[3]! });
          if (final) return { code: lastCode, lines };
        } else if (line.startsWith(" ")) {
          if (sent) lines.push({ code: lastCode, text: line.slice(1) });
        } else if (line !== "") {
          throw new BirdSocketError(`Unexpected line from BIRD: ${JSON.stringify(line)}`);
        }
      }
    }
  } catch (error) {
    if (error instanceof BirdSocketError) throw error;
    throw new BirdSocketError(
      `No complete reply to "${command}" from ${socket} within ${timeoutMs} ms: ${error}`,
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // already closed by the deadline
    }
  }
}

/** One BGP session as `show protocols` lists it. */
export interface BirdProtocolState {
  name: string;
  /** `up`, `start`, `down`, ... */
  state: string;
  /** `Established`, `Active`, `Connect`, ... (the BGP state is the first word of Info). */
  info: string;
  established: boolean;
  /** Routes exported on all channels (from `show protocols all`). */
  exported: number;
}

/**
 * Parses `show protocols all` into the state of Keelson's BGP protocols.
 * @param reply the reply
 * @returns the protocols named `keelson_peer_<peer name>`, in reply order
 */
export function parseProtocols(reply: BirdReply): BirdProtocolState[] {
  const out: BirdProtocolState[] = [];
  let current: BirdProtocolState | undefined;
  for (const { code, text } of reply.lines) {
    if (code === 1002) {
      const words = text.trim().split(/\s+/);
      current = undefined;
      if (/^keelson_peer_[a-z0-9.-]+$/.test(words[0] ?? "") && words[1] === "BGP") {
        // Name Proto Table State Since(date time) Info...
        const info = words.slice(6).join(" ");
        current = {
          name: words[0]!,
          state: words[3] ?? "",
          info,
          established: /\bEstablished\b/.test(info),
          exported: 0,
        };
        out.push(current);
      }
    } else if (code === 1006 && current) {
      const routes = /Routes:\s+\d+ imported, (\d+) exported/.exec(text);
      if (routes) current.exported += Number(routes[1]);
    }
  }
  return out;
}
