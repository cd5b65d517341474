/**
 * The name of the user this process runs as, for keepalived's `vrrp_notify_fifo ... <user>`
 * (keepalived wants a name; an unknown one makes it drop the FIFO): `Deno.uid()` (the binary has
 * `--allow-sys=uid`) looked up in `/etc/passwd`. Not `/proc/self/status`: Deno refuses every
 * `/proc` read without `--allow-all`.
 *
 * @module
 */
import { ACCOUNTS_FILE, osReason, readInputFile } from "../../../src/files/read_input_file.ts";
import { accountEntry } from "../../../src/files/process_user.ts";
import { USER_NAME_REGEXP } from "./render.ts";
import { errorMessage } from "../../../src/log/error_message.ts";

/** The passwd file read. */
export const PASSWD_FILE = "/etc/passwd";

/**
 * Finds a uid's name in passwd text.
 * @param passwd the text of /etc/passwd
 * @param uid the numeric user id
 * @returns the name, or undefined when absent or not a name keepalived's file may hold
 */
export function userNameOf(passwd: string, uid: number): string | undefined {
  // the passwd line is found as every other account lookup finds it; keepalived's file is stricter
  const name = accountEntry(passwd, uid)?.name;
  return name !== undefined && USER_NAME_REGEXP.test(name) ? name : undefined;
}

/** The user's name, or why it is unknown. */
export type CurrentUser = { name: string } | { name?: undefined; problem: string };

/**
 * This process's user.
 * @param options the uid and passwd file to use. @default Deno.uid() and /etc/passwd
 * @returns the name, or a sentence saying why it cannot be found
 */
export async function currentUser(
  options: { uid?: () => number | null; passwdFile?: string } = {},
): Promise<CurrentUser> {
  const file = options.passwdFile ?? PASSWD_FILE;
  let uid: number | null;
  try {
    uid = (options.uid ?? Deno.uid)();
  } catch (error) {
    return { problem: `cannot read this process's uid: ${osReason(error)}` };
  }
  if (uid === null) return { problem: "this platform has no uid" };
  let passwd: string;
  try {
    passwd = await readInputFile(file, ACCOUNTS_FILE);
  } catch (error) {
    return { problem: `cannot read ${file}: ${errorMessage(error)}` };
  }
  const name = userNameOf(passwd, uid);
  return name === undefined
    ? { problem: `uid ${uid} has no entry in ${file} with a portable user name` }
    : { name };
}
