/**
 * BIRD's control socket, read-only, for the unprivileged agent. BIRD 2.0.12 has one control
 * socket, and whoever may connect to it may run every command (`configure "/any/file"`,
 * `disable`, `restart`): `birdc -r` is a request of the client, not a limit, and a per-socket
 * `restrict` came only with later BIRD versions. So the agent is not in group bird; the root step
 * (`keelson apply-host-config --watch`, in group bird) serves this relay instead, in root's
 * directory beside `track_file_dir` (`src/config/daemon_dir.ts`), where only group keelson may
 * connect (mode 0660 in a setgid directory of group keelson).
 *
 * Each connection carries one command, as `control_socket.ts` speaks it: the relay connects to
 * BIRD, passes BIRD's greeting on, reads one request line (at most `maxRequestBytes`), and
 * forwards it only when it is exactly one of `READ_ONLY_BIRD_COMMANDS`; anything else gets
 * BIRD's own refusal code (`8007 Access denied`) and BIRD never sees it. BIRD's reply is passed
 * on up to its last line, bounded in size (`maxReplyBytes`), and every connection ends within
 * `timeoutMs`; at most `maxConnections` are served at once. What the client sends after its
 * first line is never read.
 *
 * @module
 */
import { dirname } from "node:path";
import { delay } from "../../../src/kube/delay.ts";
import { logger } from "../../../src/log/logging.ts";
import { errorMessage } from "../../../src/log/error_message.ts";

/** The commands Keelson's agent sends (`session_monitor.ts`); the relay forwards only these. */
export const READ_ONLY_BIRD_COMMANDS: readonly string[] = ["show protocols all"];

/** BIRD's reply to a command a restricted client may not run (`doc/reply_codes`). */
export const ACCESS_DENIED_REPLY = "8007 Access denied: this socket is read-only\n";

/** Options of `serveReadOnlyBird`. */
export interface ReadOnlyRelayOptions {
  /** The socket the agent connects to. Its directory must be root's and writable by no one else. */
  listenPath: string;
  /** BIRD's control socket (`[bgp] socket`). */
  birdSocket: string;
  /** Stops serving (the socket is removed). */
  signal: AbortSignal;
  /** The longest request line, newline included. @default 256 */
  maxRequestBytes?: number;
  /** The largest reply passed on (greeting included). @default 8 MiB */
  maxReplyBytes?: number;
  /** The longest one connection may last, from accept to its end. @default 5000 */
  timeoutMs?: number;
  /** Connections served at once; more are closed at once. @default 4 */
  maxConnections?: number;
  /** Retry period while the socket cannot be served (its directory missing). @default 2000 */
  retryMs?: number;
  /** The uid that must own the socket's directory. @default 0 (root) */
  directoryOwner?: number;
  /** Called once the socket listens (tests). */
  onListening?: () => void;
}

const NEWLINE = 0x0a;

/**
 * Serves the read-only socket until `signal` aborts, making it again after a failure. Never
 * rejects.
 * @param options paths, bounds and the stop signal
 */
export async function serveReadOnlyBird(options: ReadOnlyRelayOptions): Promise<void> {
  const log = logger("bird", "read-only-socket");
  let lastError = "";
  while (!options.signal.aborted) {
    try {
      await serveOnce(options);
      lastError = "";
    } catch (error) {
      const message = errorMessage(error);
      if (message !== lastError && !options.signal.aborted) {
        log.error("Cannot serve BIRD's read-only socket {path} (retrying): {error}", {
          path: options.listenPath,
          error: message,
        });
      }
      lastError = message;
    }
    await delay(options.retryMs ?? 2000, options.signal);
  }
}

async function serveOnce(options: ReadOnlyRelayOptions): Promise<void> {
  const path = options.listenPath;
  await checkDirectory(dirname(path), options.directoryOwner ?? 0);
  // a socket left by a stopped relay; the directory is root's, so the name is nobody else's
  await Deno.remove(path).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  const listener = Deno.listen({ transport: "unix", path });
  const close = () => {
    try {
      listener.close();
    } catch { /* closed */ }
  };
  options.signal.addEventListener("abort", close, { once: true });
  const active = new Set<Promise<void>>();
  try {
    // the directory is setgid group keelson: the socket's group; connecting needs write
    await Deno.chmod(path, 0o660);
    options.onListening?.();
    const max = options.maxConnections ?? 4;
    for await (const conn of listener) {
      if (active.size >= max) {
        closeQuietly(conn);
        continue;
      }
      const served = relayOne(conn as Deno.UnixConn, options).finally(() => active.delete(served));
      active.add(served);
    }
  } catch (error) {
    if (!options.signal.aborted) throw error;
  } finally {
    options.signal.removeEventListener("abort", close);
    close();
    await Promise.all(active);
    await Deno.remove(path).catch(() => {});
  }
}

/** The directory must be a real directory of `owner` (root) that no one else may write. */
async function checkDirectory(dir: string, owner: number): Promise<void> {
  const info = await Deno.lstat(dir);
  const mode = info.mode ?? 0;
  if (!info.isDirectory || info.uid !== owner || (mode & 0o022) !== 0) {
    throw new Error(
      `${dir} must be a directory owned by root that no one else may write (keelson.tmpfiles ` +
        `makes it 2750 root:keelson); it is ${
          info.isDirectory ? "a directory" : "not a directory"
        }` +
        ` of uid ${info.uid}, mode ${(mode & 0o7777).toString(8)}`,
    );
  }
}

/** One client: BIRD's greeting, one allowed command, BIRD's reply; within the deadline. */
async function relayOne(client: Deno.UnixConn, options: ReadOnlyRelayOptions): Promise<void> {
  let bird: Deno.UnixConn | undefined;
  const timer = setTimeout(() => {
    closeQuietly(client);
    if (bird) closeQuietly(bird);
  }, options.timeoutMs ?? 5000);
  const onAbort = () => closeQuietly(client);
  options.signal.addEventListener("abort", onAbort, { once: true });
  try {
    // BIRD unreachable: the client's connection closes with no greeting, as BIRD's absence does
    bird = await Deno.connect({ transport: "unix", path: options.birdSocket });
    let budget = options.maxReplyBytes ?? 8 * 1024 * 1024;
    budget -= await passReply(bird, client, budget);
    const request = await readRequest(client, options.maxRequestBytes ?? 256);
    if (request === undefined || !READ_ONLY_BIRD_COMMANDS.includes(request)) {
      await client.write(new TextEncoder().encode(ACCESS_DENIED_REPLY));
      return;
    }
    await writeAll(bird, new TextEncoder().encode(request + "\n"));
    await passReply(bird, client, budget);
  } catch {
    // a client gone, BIRD gone, a reply too large or too slow: the connection just ends
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener("abort", onAbort);
    closeQuietly(client);
    if (bird) closeQuietly(bird);
  }
}

/**
 * Reads the client's first line.
 * @returns the line without its newline (and a `\r` before it), or undefined when none came
 *   within `max` bytes or the client closed first
 */
async function readRequest(client: Deno.UnixConn, max: number): Promise<string | undefined> {
  const buffer = new Uint8Array(max);
  let length = 0;
  while (length < max) {
    const n = await client.read(buffer.subarray(length));
    if (n === null) return undefined;
    const end = buffer.subarray(length, length + n).indexOf(NEWLINE);
    if (end >= 0) {
      const line = new TextDecoder("utf-8", { fatal: true }).decode(
        buffer.subarray(0, length + end),
      );
      return line.endsWith("\r") ? line.slice(0, -1) : line;
    }
    length += n;
  }
  return undefined;
}

/**
 * Passes BIRD's bytes on until the last line of a reply (`NNNN text`: a code and a space).
 * @returns the bytes passed
 * @throws {Error} when BIRD closes first or the reply exceeds `budget`
 */
async function passReply(
  bird: Deno.UnixConn,
  client: Deno.UnixConn,
  budget: number,
): Promise<number> {
  const chunk = new Uint8Array(65536);
  let passed = 0;
  // the start of the line being read, up to 5 bytes: enough to see "NNNN "
  let head: number[] = [];
  while (true) {
    const n = await bird.read(chunk);
    if (n === null) throw new Error("BIRD closed before the reply ended");
    passed += n;
    if (passed > budget) throw new Error("BIRD's reply is larger than the relay passes");
    let last = false;
    for (let i = 0; i < n; i++) {
      const byte = chunk[i]!;
      if (byte === NEWLINE) {
        if (isLastLine(head)) {
          // a reply ends at its last line; BIRD sends nothing more before the next command
          await writeAll(client, chunk.subarray(0, i + 1));
          last = true;
          break;
        }
        head = [];
      } else if (head.length < 5) {
        head.push(byte);
      }
    }
    if (last) return passed;
    await writeAll(client, chunk.subarray(0, n));
  }
}

function isLastLine(head: readonly number[]): boolean {
  return head.length === 5 && head.slice(0, 4).every((b) => b >= 0x30 && b <= 0x39) &&
    head[4] === 0x20;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* closed */ }
}
