/**
 * A small parsed inventory for unit tests (built through the real schema, so defaults apply).
 *
 * @module
 */
import { ConfigSchema } from "../../../src/config/schema.ts";
import type { Config } from "../../../src/config/types.ts";

/**
 * A Config with the given machines (and optional other tables), defaults filled in.
 * @param raw the TOML-shaped object
 * @returns the validated Config
 */
export function testConfig(raw: Record<string, unknown>): Config {
  return ConfigSchema.parse(raw);
}

/** Three machines: cp-1 (by id), w-1 (hostname), w-2 (IPs), all active. */
export function sampleConfig(): Config {
  return testConfig({
    machines: [
      {
        name: "cp-1",
        id: "SN-1",
        role: "control-plane",
        region: "dc1",
        zone: "dc1-a",
        instance_type: "r650",
        internal_ips: ["10.0.0.11", "fd00::11"],
        external_ips: ["203.0.113.11"],
        hostname: "cp-1.dc1.example.net",
        labels: { "example.com/storage": "nvme", "node-role.kubernetes.io/x": "y" },
      },
      {
        name: "w-1",
        region: "dc1",
        zone: "dc1-b",
        internal_ips: ["10.0.0.21"],
        hostname: "w1.example.net",
      },
      { name: "w-2", region: "dc1", zone: "dc1-b", internal_ips: ["10.0.0.22"] },
    ],
  });
}
