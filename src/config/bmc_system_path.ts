/**
 * The one rule for a Redfish ComputerSystem's path, used by `check` for the inventory's
 * `[machines.bmc] system` and by the Redfish client for every path a BMC hands back (a member of
 * the Systems collection): `/redfish/v1/Systems/<id>`, the id exactly one path segment that no URL
 * parser or server can read as another resource. So `.` and `..` (steps, not ids), and anything
 * holding `/`, `%` (an encoded `/` or `.`), `?`, `#`, a space or a control character are refused.
 *
 * @module
 */

/** The Redfish collection of ComputerSystems. */
export const SYSTEMS_COLLECTION_PATH = "/redfish/v1/Systems";

/** The longest system id accepted. */
export const MAX_SYSTEM_ID_LENGTH = 128;

// URL "unreserved" characters and ':' '@' (allowed in a segment): nothing a parser decodes,
// splits on or resolves
const SYSTEM_ID = /^[A-Za-z0-9._~:@-]+$/;

/**
 * Why `id` cannot be a system id, or undefined when it can.
 * @param id e.g. "1", "System.Embedded.1", "437XR1138R2"
 * @returns a predicate sentence, or undefined
 */
export function systemIdProblem(id: string): string | undefined {
  if (id === "") return "is empty";
  if (id === "." || id === "..") {
    return `is "${id}", a step in a path (it names the collection or the service root), not a system`;
  }
  if (id.length > MAX_SYSTEM_ID_LENGTH) return `is longer than ${MAX_SYSTEM_ID_LENGTH} characters`;
  if (!SYSTEM_ID.test(id)) {
    return "holds a character other than letters, digits, '.', '_', '~', ':', '@' and '-' " +
      "(a '/', '%', '?', '#', space or control character would make it another path)";
  }
  return undefined;
}

/**
 * The system id of `path`, or why it is not a system path.
 * @param path e.g. "/redfish/v1/Systems/1"
 * @returns `{ id }`, or `{ problem }` (a predicate sentence)
 */
export function parseSystemPath(path: string): { id: string } | { problem: string } {
  const prefix = `${SYSTEMS_COLLECTION_PATH}/`;
  if (!path.startsWith(prefix)) {
    return { problem: `is not under ${prefix} (write "${prefix}<id>", e.g. "${prefix}1")` };
  }
  const id = path.slice(prefix.length);
  const problem = systemIdProblem(id);
  return problem === undefined ? { id } : { problem: `has an id that ${problem}` };
}
