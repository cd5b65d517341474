/**
 * The name of the user this process runs as, for keepalived's `vrrp_notify_fifo ... <user>`
 * (keepalived wants a name; an unknown one makes it drop the FIFO). Read from `/proc/self/status`
 * and `/etc/passwd`, which needs no `--allow-sys=uid` in the compiled binary.
 *
 * @module
 */
import { USER_NAME_REGEXP } from "./render.ts";

/**
 * Finds a uid's name in passwd text.
 * @param passwd the text of /etc/passwd
 * @param uid the numeric user id
 * @returns the name, or undefined when absent or not a name keepalived's file may hold
 */
export function userNameOf(passwd: string, uid: number): string | undefined {
  for (const line of passwd.split("\n")) {
    const fields = line.split(":");
    if (fields.length >= 3 && Number(fields[2]) === uid && /^\d+$/.test(fields[2]!)) {
      const name = fields[0]!;
      return USER_NAME_REGEXP.test(name) ? name : undefined;
    }
  }
  return undefined;
}

/**
 * The effective user's name of this process.
 * @returns the name, or undefined when it cannot be found
 */
export function currentUserName(): string | undefined {
  try {
    const status = Deno.readTextFileSync("/proc/self/status");
    const uid = status.match(/^Uid:\s+\d+\s+(\d+)/m)?.[1];
    if (uid === undefined) return undefined;
    return userNameOf(Deno.readTextFileSync("/etc/passwd"), Number(uid));
  } catch {
    return undefined;
  }
}
