/**
 * The duplicate-name check every named inventory list shares (`[[machines]]`, `[[pools]]`,
 * `[[bgp.peers]]`): the later entry is reported, naming the first one. Folder-internal.
 *
 * @module
 */
import type { RawIssue } from "./_schema_issues.ts";

/**
 * Records `name` at `index` the first time; on a repeat, the issue for the later entry.
 * @param seen names met so far, with the index of their first entry (updated)
 * @param list where the entries live, e.g. `["bgp", "peers"]`
 * @param noun what an entry is, e.g. `peer`
 * @param name this entry's name
 * @param index this entry's index
 * @returns undefined for a first name, else the earlier index and the issue
 * @example
 * ```ts
 * const dup = duplicateName(names, ["pools"], "pool", pool.name, i);
 * if (dup) issues.push(dup.issue);
 * ```
 */
export function duplicateName(
  seen: Map<string, number>,
  list: readonly string[],
  noun: string,
  name: string,
  index: number,
): { earlier: number; issue: RawIssue } | undefined {
  const earlier = seen.get(name);
  if (earlier === undefined) {
    seen.set(name, index);
    return undefined;
  }
  return {
    earlier,
    issue: {
      path: [...list, index, "name"],
      message: `duplicate ${noun} name "${name}": ${list.join(".")}[${earlier}] has it too`,
    },
  };
}
