/**
 * Test inventories for the keepalived model, render and e2e tests.
 *
 * @module
 */
import { ConfigSchema } from "../../../../../src/config/schema.ts";
import type { Config } from "../../../../../src/config/types.ts";

/** Options of `testConfig`. */
export interface TestConfigOptions {
  /** Extra keys of `[keepalived]`. */
  keepalived?: Record<string, unknown>;
  /** `[control_plane] vip`. @default ["10.250.0.100"] */
  controlPlaneVips?: string[];
  /** internal_ips per control-plane machine. @default 10.250.0.11-13 */
  ips?: string[][];
  /** `[[pools]]`. @default `TEST_POOLS`, which hold every VIP these tests serve */
  pools?: Record<string, unknown>[];
}

/** Pools holding the Service VIPs of the keepalived tests (keepalived serves only pool addresses). */
export const TEST_POOLS = [
  { name: "test-v4", addresses: ["10.250.0.128-10.250.255.254"] },
  { name: "test-v6", addresses: ["fd00::100-fd00::ffff", "fd00:250::/64"] },
];

/**
 * A parsed config with three control-plane machines cp-1..cp-3 and one worker.
 * @param options overrides
 * @returns the validated config
 */
export function testConfig(options: TestConfigOptions = {}): Config {
  const ips = options.ips ?? [["10.250.0.11"], ["10.250.0.12"], ["10.250.0.13"]];
  return ConfigSchema.parse({
    keepalived: {
      interface: "eth0",
      vrid_range: [100, 119],
      track_file_dir: "/run/keelson",
      ...options.keepalived,
    },
    control_plane: { vip: options.controlPlaneVips ?? ["10.250.0.100"] },
    pools: options.pools ?? TEST_POOLS,
    machines: [
      ...ips.map((internal, i) => ({
        name: `cp-${i + 1}`,
        role: "control-plane",
        internal_ips: internal,
      })),
      { name: "worker-1", role: "worker", internal_ips: ["10.250.0.21"] },
    ],
  });
}

/**
 * `count` addresses 10.250.<third>.<n> starting at n = `from`.
 * @param count how many
 * @param from first host byte
 * @param third third byte
 * @returns the addresses as text
 */
export function vipRange(count: number, from = 150, third = 0): string[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    return `10.250.${third + Math.floor(n / 256)}.${n % 256}`;
  });
}
