/**
 * Where a staged file leaves what Keelson renders, said without echoing the file: the staged
 * path belongs to the unprivileged account, which could make it a link to a root-only file, and
 * the root step's messages go to the journal.
 *
 * @module
 */

/**
 * The first line where `staged` differs from `expected`, as a sentence.
 * @param staged the text read from the staging path
 * @param expected the text Keelson renders from the inventory for the same dynamic inputs
 * @returns undefined when the two are byte-for-byte equal, else e.g. "line 7 differs (expected
 *   a line starting with `vrrp_instance`)"
 */
export function firstDifference(staged: string, expected: string): string | undefined {
  if (staged === expected) return undefined;
  const got = staged.split("\n");
  const want = expected.split("\n");
  for (let i = 0; i < Math.max(got.length, want.length); i++) {
    if (got[i] === want[i]) continue;
    if (want[i] === undefined) return `line ${i + 1} is beyond the end of Keelson's rendering`;
    // the first word only: a rendered line may hold a secret (a BGP password)
    const word = /^\s*([A-Za-z_#}{]+)/.exec(want[i]!)?.[1];
    return `line ${i + 1} differs from Keelson's rendering` +
      (word ? ` (expected a line starting with \`${word}\`)` : " (expected an empty line)");
  }
  return "the file differs from Keelson's rendering";
}
