/**
 * Log levels as journald priorities. systemd connects a service's stderr to journald with a
 * stream socket and says so in `JOURNAL_STREAM` (`<device>:<inode>` of that socket,
 * systemd.exec(5)); journald reads a `<N>` syslog priority at the start of each line and stores
 * the line at that priority without it (`SyslogLevelPrefix=`, on by default, sd-daemon(3)). So
 * `journalctl -p err` finds errors, and the stored message is the line as written.
 *
 * A process whose stderr was redirected after systemd set `JOURNAL_STREAM` (a child of a
 * service, `keelson run 2>file` in a unit's shell) inherits the variable, so the prefix is used
 * only when stderr is that very socket, as systemd.exec(5) advises.
 *
 * @module
 */
import { fstatSync } from "node:fs";
import type { LogLevel, LogRecord, TextFormatter } from "@logtape/logtape";

/** syslog(3) priorities of the log levels: LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR, LOG_CRIT. */
const PRIORITY: Record<LogLevel, number> = {
  trace: 7,
  debug: 7,
  info: 6,
  warning: 4,
  error: 3,
  fatal: 2,
};

/**
 * The `<N>` prefix of a level.
 * @param level a log level
 * @returns e.g. `<3>` for `error`
 */
export function syslogPrefix(level: LogLevel): string {
  return `<${PRIORITY[level]}>`;
}

/** The device and inode of an open file, as `fstat` gives them. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
}

/**
 * Whether `JOURNAL_STREAM` names the file `identity` describes.
 * @param journalStream the variable's value (`<dev>:<ino>`, decimal), or undefined
 * @param identity the file (stderr), or undefined when it could not be read
 * @returns true when both are present and equal
 */
export function namesJournalStream(
  journalStream: string | undefined,
  identity: FileIdentity | undefined,
): boolean {
  const match = /^(\d+):(\d+)$/.exec(journalStream ?? "");
  if (!match || !identity) return false;
  return BigInt(match[1]!) === identity.dev && BigInt(match[2]!) === identity.ino;
}

/**
 * Whether stderr is the journald stream systemd connected (see the module documentation).
 * Reads `JOURNAL_STREAM` and fstat(2) of fd 2; neither needs more than the binary's permissions.
 * @returns false outside systemd, or when stderr is something else now
 */
export function stderrIsJournal(): boolean {
  let journalStream: string | undefined;
  let identity: FileIdentity | undefined;
  try {
    journalStream = Deno.env.get("JOURNAL_STREAM");
    const stat = fstatSync(2, { bigint: true });
    identity = { dev: stat.dev, ino: stat.ino };
  } catch {
    return false; // unknown: plain lines are right everywhere, prefixed ones only in journald
  }
  return namesJournalStream(journalStream, identity);
}

/**
 * Prefixes every line of what `formatter` makes with the record's syslog priority. journald
 * splits its stream at newlines and NUL bytes, so a message of several lines becomes several
 * entries, each at the record's priority.
 * @param formatter the text or JSON-lines formatter
 * @returns a formatter for a journald stream
 */
export function withSyslogPrefix(formatter: TextFormatter): TextFormatter {
  return (record: LogRecord) => {
    const prefix = syslogPrefix(record.level);
    // after every separator that is not the text's last character
    return prefix + formatter(record).replace(/([\n\0])(?=[^])/g, `$1${prefix}`);
  };
}
