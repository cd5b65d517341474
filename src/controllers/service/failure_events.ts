/**
 * The Warning events of a failed Service sync: upstream's `SyncLoadBalancerFailed`, plus
 * Keelson's `AllocationFailed` when the provider named a reason (`ProviderError.reason`).
 *
 * @module
 */
import { ProviderError } from "../../cloud/provider.ts";
import { errorMessage } from "../../log/error_message.ts";

/**
 * The Warning events of a failed sync.
 * @param key `namespace/name`
 * @param error what the sync threw
 * @returns `[reason, message]` pairs in emission order
 */
export function failureEvents(key: string, error: unknown): [string, string][] {
  const events: [string, string][] = [
    ["SyncLoadBalancerFailed", `Error syncing load balancer: ${errorMessage(error)}`],
  ];
  const reason = error instanceof ProviderError ? error.reason : undefined;
  if (reason !== undefined && reason !== "") {
    // a provider's message may already open with the sentence this event opens with
    const opening = `Cannot allocate an address for service "${key}"`;
    const message = errorMessage(error);
    const detail = message.startsWith(`${opening}: `) ? message.slice(opening.length + 2) : message;
    events.push(["AllocationFailed", `${opening} (${reason}): ${detail}`]);
  }
  return events;
}
