/**
 * The addresses actually present on an interface, read from the kernel through netlink
 * (`ip -j addr show dev X`): the ground truth of which VIPs this host serves, whatever keepalived
 * believes (a VIP left behind by a killed keepalived is still served).
 *
 * @module
 */
import * as z from "zod/v4";
import { canonicalIp } from "../../../src/net/ip.ts";
import { failureReason, runBounded } from "../run_bounded.ts";

const IpAddrOutput = z.array(
  z.object({
    ifname: z.string().optional(),
    addr_info: z.array(z.object({ local: z.string().optional() }).loose()).optional(),
  }).loose(),
);

/**
 * Parses the JSON `ip -j addr show` prints.
 * @param text its stdout
 * @returns every address, canonical, sorted and unique
 * @throws {Error} when the text is not that JSON
 */
export function parseIpAddrJson(text: string): string[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error("ip -j addr printed something that is not JSON");
  }
  const parsed = IpAddrOutput.safeParse(raw);
  if (!parsed.success) throw new Error("ip -j addr printed JSON of an unexpected shape");
  const addresses = new Set<string>();
  for (const link of parsed.data) {
    for (const info of link.addr_info ?? []) {
      const ip = info.local !== undefined ? canonicalIp(info.local) : undefined;
      if (ip) addresses.add(ip);
    }
  }
  return [...addresses].sort();
}

/** Options of `readInterfaceAddresses`. */
export interface ReadAddressesOptions {
  /** Only this interface. @default every interface */
  interface?: string;
  /** Inside this network namespace (`ip -n`; tests). */
  netns?: string;
  /** Longest the command may run. @default 5000 */
  timeoutMs?: number;
}

/**
 * Lists the addresses of one interface, or of every interface: the one reader of `ip -j addr`.
 * @param options interface, namespace, timeout
 * @returns the canonical addresses, sorted
 * @throws {Error} when `ip` fails, times out or prints something unexpected
 */
export async function readInterfaceAddresses(options: ReadAddressesOptions): Promise<string[]> {
  const args = [
    ...(options.netns ? ["-n", options.netns] : []),
    "-j",
    "addr",
    "show",
    ...(options.interface ? ["dev", options.interface] : []),
  ];
  // `ip` answers at once; a hung one must not hold the caller's loop
  const run = await runBounded(["ip", ...args], options.timeoutMs ?? 5000);
  if (run.code !== 0 || run.timedOut) {
    throw new Error(`Cannot list addresses with "ip ${args.join(" ")}": ${failureReason(run)}`);
  }
  return parseIpAddrJson(run.stdout);
}
