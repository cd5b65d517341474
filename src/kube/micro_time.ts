/**
 * `metav1.MicroTime` on the wire: kube-apiserver parses Lease `acquireTime`/`renewTime` (and
 * events.k8s.io `eventTime`) with six fractional digits and rejects a plain `Date`'s three
 * (`cannot parse ".093Z" as ".000000"`). The same few lines as client-node's `V1MicroTime`,
 * without loading client-node's runtime.
 *
 * @module
 */

/** A `Date` that serializes (`toISOString`, `JSON.stringify`) with microsecond precision. */
export class MicroTime extends Date {
  /**
   * The time as RFC 3339 with six fractional digits.
   * @returns e.g. `2026-11-21T14:18:37.144000Z`
   */
  override toISOString(): string {
    return super.toISOString().slice(0, -1) + "000Z";
  }
}
