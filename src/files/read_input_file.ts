/**
 * Reading a file an operator names: on the command line (`--config`, `--state`, `--kubeconfig`),
 * in the inventory (`metrics_token_file`, the TLS files, a `password_file`, the kubeconfig, the
 * files keepalived and BIRD use) or in a kubeconfig (`tokenFile`, `certificate-authority`,
 * `client-certificate`, `client-key`). Only a regular file, only up to the size cap of its kind, and
 * only within a deadline: `/dev/zero` cannot fill memory, a FIFO cannot block the agent, and a
 * hung file system cannot stall a reload.
 *
 * The type is checked with stat(2) before open(2): opening a FIFO for reading blocks in open(2)
 * until a writer appears, on one of Deno's blocking threads, where nothing can interrupt it. The
 * deadline still covers a file swapped for a FIFO between the two calls: the read is abandoned (the
 * blocked thread waits for a writer; a file it opens late is closed at once).
 *
 * @module
 */
import { processUser } from "./process_user.ts";

/** What a file is, for its size cap and for the message when it is larger. */
export interface FileKind {
  /** The largest file read, in bytes. */
  readonly maxBytes: number;
  /** What the file should hold, e.g. "a kubeconfig" (completes "… is far smaller"). */
  readonly what: string;
}

const KIB = 1024;
const MIB = 1024 * 1024;

/** An inventory or cluster snapshot: far above any real one (100k pool entries ≈ 3 MiB). */
export const INPUT_FILE: FileKind = {
  maxBytes: 64 * MIB,
  what: "an inventory or cluster snapshot",
};
/** A kubeconfig (a real one is a few KiB, even with several embedded certificates). */
export const KUBECONFIG_FILE: FileKind = { maxBytes: 1 * MIB, what: "a kubeconfig" };
/** A PEM certificate, key or CA bundle (the system CA bundle is about 220 KiB). */
export const PEM_FILE: FileKind = {
  maxBytes: 1 * MIB,
  what: "a PEM certificate, key or CA bundle",
};
/** A bearer token (a ServiceAccount JWT is 1-2 KiB). */
export const TOKEN_FILE: FileKind = { maxBytes: 64 * KIB, what: "a bearer token" };
/** A TCP-MD5 password (at most 80 bytes). */
export const PASSWORD_FILE: FileKind = { maxBytes: 4 * KIB, what: "a TCP-MD5 password" };
/** A file Keelson rendered (keepalived's, BIRD's), read back to compare. */
export const RENDERED_FILE: FileKind = { maxBytes: 16 * MIB, what: "a file Keelson renders" };
/** A pid file. */
export const PID_FILE: FileKind = { maxBytes: 4 * KIB, what: "a pid file" };
/** `/etc/passwd` or `/etc/group`. */
export const ACCOUNTS_FILE: FileKind = { maxBytes: 16 * MIB, what: "an account database" };

/** The largest inventory or snapshot read. */
export const MAX_INPUT_BYTES = INPUT_FILE.maxBytes;
/** How long one read may take, stat to close. A local regular file takes microseconds. */
export const READ_TIMEOUT_MS = 5_000;

/** Why a file could not be read. */
export type InputFileProblem =
  | "not-found"
  | "not-regular"
  | "too-large"
  | "not-readable"
  | "timed-out"
  | "failed";

/** A file that could not be read; the message is a sentence without the path before it. */
export class InputFileError extends Error {
  /** The kind of problem (a missing kubeconfig is allowed, other problems are not). */
  readonly problem: InputFileProblem;

  /**
   * @param problem the kind of problem
   * @param message e.g. "is not a regular file (...)"; callers put the file's name before it
   * @param options the cause
   */
  constructor(problem: InputFileProblem, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "InputFileError";
    this.problem = problem;
  }
}

/** Options of `readInputFile`. */
export interface ReadInputOptions {
  /** The deadline in ms. @default READ_TIMEOUT_MS */
  timeoutMs?: number;
  /** stat(2) (tests: a file that turns into a FIFO after it). @default Deno.stat */
  stat?: (path: string) => Promise<Deno.FileInfo>;
}

/**
 * Reads a regular file of at most `kind.maxBytes` as UTF-8 text, within a deadline.
 * @param path the file
 * @param kind its size cap and what it should hold. @default INPUT_FILE
 * @param options the deadline (and a stat for tests)
 * @returns the text
 * @throws {InputFileError} with a sentence (callers name the file and the flag or field that
 *   named it): not found, not a regular file (directory, FIFO, socket, device), larger than the
 *   cap, not readable by this process's user (naming the user and the fix), or not read within
 *   the deadline
 */
export async function readInputFile(
  path: string,
  kind: FileKind = INPUT_FILE,
  options: ReadInputOptions = {},
): Promise<string> {
  const timeoutMs = options.timeoutMs ?? READ_TIMEOUT_MS;
  const attempt: Attempt = { abandoned: false };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new InputFileError(
          "timed-out",
          `was not read within ${timeoutMs / 1000} s (a hung file system, or a FIFO put in its ` +
            "place); Keelson gave up on it",
        ),
      );
    }, timeoutMs);
  });
  try {
    // Promise.race handles a late rejection of the abandoned read
    return await Promise.race([readRegularFile(path, kind, options, attempt), deadline]);
  } catch (error) {
    if (error instanceof InputFileError && error.problem === "timed-out") {
      attempt.abandoned = true;
      // closing the file ends a read still pending on it
      closeQuietly(attempt.file);
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

interface Attempt {
  abandoned: boolean;
  file?: Deno.FsFile;
}

async function readRegularFile(
  path: string,
  kind: FileKind,
  options: ReadInputOptions,
  attempt: Attempt,
): Promise<string> {
  let info: Deno.FileInfo;
  try {
    info = await (options.stat ?? Deno.stat)(path);
  } catch (error) {
    throw await osError(error, path, "stat", kind);
  }
  if (info.isDirectory) throw new InputFileError("not-regular", "is a directory");
  if (!info.isFile) throw notRegular();
  if (info.size > kind.maxBytes) throw tooLarge(info.size, kind);
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    throw await osError(error, path, "open", kind);
  }
  if (attempt.abandoned) {
    closeQuietly(file);
    throw new InputFileError("timed-out", "was opened after its deadline");
  }
  attempt.file = file;
  try {
    // the path may name another file now than the one stat(2) saw
    if (!(await file.stat()).isFile) throw notRegular();
    // read to the end, but never more than cap + 1 bytes: the file may have grown since stat(2)
    // (a non-atomic write), and its whole text is wanted, not the size stat saw
    let buffer = new Uint8Array(Math.min(info.size, kind.maxBytes) + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > kind.maxBytes) break;
        const grown = new Uint8Array(Math.min(buffer.length * 2, kind.maxBytes + 1));
        grown.set(buffer);
        buffer = grown;
      }
      const n = await file.read(buffer.subarray(length));
      if (n === null) break;
      length += n;
    }
    if (length > kind.maxBytes) throw tooLarge(length, kind);
    return new TextDecoder().decode(buffer.subarray(0, length));
  } finally {
    closeQuietly(file);
  }
}

function closeQuietly(file: Deno.FsFile | undefined): void {
  try {
    file?.close();
  } catch { /* already closed */ }
}

function notRegular(): InputFileError {
  return new InputFileError(
    "not-regular",
    "is not a regular file (a FIFO, socket or device is never read: it may never end)",
  );
}

function tooLarge(size: number, kind: FileKind): InputFileError {
  return new InputFileError(
    "too-large",
    `is larger than ${formatBytes(kind.maxBytes)} (${size} bytes or more); ${kind.what} is far ` +
      "smaller",
  );
}

function formatBytes(bytes: number): string {
  return bytes >= MIB ? `${bytes / MIB} MiB` : `${bytes / KIB} KiB`;
}

async function osError(
  error: unknown,
  path: string,
  call: "stat" | "open",
  kind: FileKind,
): Promise<Error> {
  if (error instanceof Deno.errors.NotFound) {
    return new InputFileError("not-found", osReason(error), { cause: error });
  }
  // the account files are read to write this very message: no lookup of the user for them
  if (error instanceof Deno.errors.PermissionDenied && kind !== ACCOUNTS_FILE) {
    return new InputFileError(
      "not-readable",
      call === "open" ? await notReadable(path) : await notReachable(path),
      { cause: error },
    );
  }
  return new InputFileError("failed", osReason(error), { cause: error });
}

/** "is not readable by user keelson (uid 998): chown root:keelson F && chmod 0640 F" */
async function notReadable(path: string): Promise<string> {
  const user = await userOfProcess();
  const file = shellWord(path);
  return `is not readable by ${user.who}: chown root:${user.group} ${file} && chmod 0640 ${file}`;
}

/** stat(2) failed with EACCES: a directory on the way lacks search (x) permission. */
async function notReachable(path: string): Promise<string> {
  const user = await userOfProcess();
  let dir = path.startsWith("/") ? path : `./${path}`;
  // the deepest directory this user can stat is the one it cannot search
  do {
    dir = dir.slice(0, Math.max(dir.lastIndexOf("/"), 1));
    if (await Deno.stat(dir).then(() => true, () => false)) break;
  } while (dir.length > 1 && dir !== ".");
  const at = shellWord(dir);
  return `cannot be reached by ${user.who}: the directory ${at} is not searchable by that user; ` +
    `chgrp ${user.group} ${at} && chmod g+x ${at} (or o+x), and make the file readable too`;
}

async function userOfProcess(): Promise<{ who: string; group: string }> {
  const user = await processUser((p) => readInputFile(p, ACCOUNTS_FILE));
  if (!user) return { who: "the user Keelson runs as", group: "keelson" };
  return {
    who: user.name ? `user ${user.name} (uid ${user.uid})` : `uid ${user.uid}`,
    group: user.group ?? user.name ?? "keelson",
  };
}

/** A path as one shell word: bare when it is plain, single-quoted otherwise. */
function shellWord(path: string): string {
  return /^[A-Za-z0-9_./+-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

/** "No such file or directory (os error 2): stat '/x'" -> "no such file or directory (os error 2)" */
export function osReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const reason = error.message.replace(/\): .*$/s, ")").trim();
  return reason.charAt(0).toLowerCase() + reason.slice(1);
}
