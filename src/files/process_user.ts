/**
 * The user this process runs as, by name, for messages that tell an operator whom to give a file
 * to. The uid comes from `Deno.uid()` (the binary carries `--allow-sys=uid`: Deno 2.9 refuses every
 * `/proc` read without `--allow-all`), the names from `/etc/passwd` and `/etc/group`.
 *
 * @module
 */

/** Who runs this process. Names are absent where the account files do not hold them. */
export interface ProcessUser {
  uid: number;
  /** The user name, e.g. `keelson`. */
  name?: string;
  /** The name of the user's primary group, e.g. `keelson`. */
  group?: string;
}

/** A name these files may hold and a message may show: no spaces, quotes or control characters. */
const ACCOUNT_NAME = /^[A-Za-z0-9._][A-Za-z0-9._-]{0,31}\$?$/;

/**
 * Finds an id's entry in passwd- or group-shaped text (`name:x:id:...`).
 * @param text the file's text
 * @param id the numeric id (third field)
 * @returns the name and the fourth field (a passwd entry's primary gid), or undefined when
 *   absent or not a plain name
 */
export function accountEntry(
  text: string,
  id: number,
): { name: string; fourth: string | undefined } | undefined {
  for (const line of text.split("\n")) {
    const fields = line.split(":");
    if (fields.length >= 3 && /^\d+$/.test(fields[2]!) && Number(fields[2]) === id) {
      return ACCOUNT_NAME.test(fields[0]!) ? { name: fields[0]!, fourth: fields[3] } : undefined;
    }
  }
  return undefined;
}

/**
 * The user this process runs as.
 * @param read reads a small system file (the caller's bounded reader)
 * @returns the uid and, where found, the user and group names; undefined when the uid is not
 *   available (no `--allow-sys=uid`)
 */
export async function processUser(
  read: (path: string) => Promise<string>,
): Promise<ProcessUser | undefined> {
  let uid: number | null;
  try {
    uid = Deno.uid();
  } catch {
    return undefined;
  }
  if (uid === null) return undefined;
  const user: ProcessUser = { uid };
  const entry = accountEntry(await read("/etc/passwd").catch(() => ""), uid);
  if (!entry) return user;
  user.name = entry.name;
  const gid = entry.fourth !== undefined && /^\d+$/.test(entry.fourth)
    ? Number(entry.fourth)
    : undefined;
  if (gid !== undefined) {
    user.group = accountEntry(await read("/etc/group").catch(() => ""), gid)?.name ?? String(gid);
  }
  return user;
}
