/**
 * The commit and build date of this build. `scripts/stamp_version.sh` writes them into the
 * bundle (scripts/compile.sh runs it); run from source, or from a bundle nobody stamped, both
 * are "unknown" — never guessed.
 *
 * @module
 */

/** A placeholder left as it is: nothing stamped it. */
const UNSTAMPED = /^@@KEELSON_[A-Z_]+@@$/;

function stamped(value: string): string {
  return UNSTAMPED.test(value) ? "unknown" : value;
}

/** The git commit the build was made from (with "-dirty" for uncommitted changes), or "unknown". */
export const COMMIT: string = stamped("@@KEELSON_COMMIT@@");

/** When the build was made, UTC, RFC 3339 (e.g. 2026-05-01T10:00:00Z), or "unknown". */
export const BUILD_DATE: string = stamped("@@KEELSON_BUILD_DATE@@");
