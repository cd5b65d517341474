/**
 * The leader elector's options as client-go's `NewLeaderElector` checks them, and its default
 * identity.
 *
 * @module
 */
import { hostname } from "../net/hostname.ts";

/** The option fields `validateElectorOptions` checks. */
export interface ElectorDurations {
  namespace: string;
  name: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * client-go's identity convention: `<hostname>_<random UUID>`.
 * @returns a fresh identity (`keelson_<UUID>` when the host name cannot be read: the UUID alone
 *   keeps identities unique)
 */
export function defaultIdentity(): string {
  return `${hostname() ?? "keelson"}_${crypto.randomUUID()}`;
}

/**
 * The identity of an agent on a machine of the inventory: client-go's form with the machine's
 * name for the host name (`<machine>_<random UUID>`), so readers of the Lease (`status`, `plan`)
 * find the leader's heartbeat by its name even where the OS host name differs (`--host`).
 * @param machine this host's machine name
 * @returns a fresh identity; `defaultIdentity()` when the name is empty
 */
export function machineIdentity(machine: string): string {
  return machine === "" ? defaultIdentity() : `${machine}_${crypto.randomUUID()}`;
}

/**
 * The host an identity of `defaultIdentity`'s form names: the first label of the part before the
 * last `_` (the whole identity when it has none).
 * @param identity a Lease's holderIdentity
 * @returns the short host name, or undefined for an empty identity
 */
export function identityHost(identity: string): string | undefined {
  if (identity === "") return undefined;
  const underscore = identity.lastIndexOf("_");
  const hostname = underscore > 0 ? identity.slice(0, underscore) : identity;
  return hostname.split(".")[0];
}

/**
 * Checks the options as client-go's NewLeaderElector does.
 * @param options the elector options
 * @param jitterFactor the acquire jitter factor
 * @throws {RangeError} naming the lease, the rule and the values
 */
export function validateElectorOptions(options: ElectorDurations, jitterFactor: number): void {
  const fail = (detail: string) => {
    throw new RangeError(
      `Cannot create leader elector for lease "${options.namespace}/${options.name}": ${detail}`,
    );
  };
  if (!options.namespace || !options.name) fail("namespace and name must not be empty");
  if (!(options.retryPeriodMs > 0)) fail(`retryPeriodMs must be > 0, got ${options.retryPeriodMs}`);
  if (!(options.leaseDurationMs >= 1000)) {
    fail(`leaseDurationMs must be at least 1000, got ${options.leaseDurationMs}`);
  }
  if (!(options.leaseDurationMs > options.renewDeadlineMs)) {
    fail(
      `leaseDurationMs must be greater than renewDeadlineMs, got ${options.leaseDurationMs} <= ${options.renewDeadlineMs}`,
    );
  }
  if (!(options.renewDeadlineMs > jitterFactor * options.retryPeriodMs)) {
    fail(
      `renewDeadlineMs must be greater than retryPeriodMs * ${jitterFactor}, got ${options.renewDeadlineMs} <= ${
        jitterFactor * options.retryPeriodMs
      }`,
    );
  }
}
