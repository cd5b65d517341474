/**
 * What a LoadBalancer Service asks the allocator for, read once into parsed values: requested
 * addresses, a pool, a sharing key, address families and the ports that matter for sharing.
 * Keelson's own annotations come first; MetalLB's (both prefixes) and kube-vip's are read too so
 * Services migrate without edits. A malformed or self-contradicting Service yields a reason and a
 * message, never a throw. Pure: no I/O.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import { formatIp, type IpFamily, parseIp } from "../../../src/net/ip.ts";
import { objectKey } from "../../../src/kube/ports.ts";

/** Annotation and field names read or written by the bare-metal load balancer. */
export const ANNOTATIONS = {
  /** Addresses the Service asks for, comma-separated (Keelson). */
  ips: "keelson.io/load-balancer-ips",
  /** The pool the Service asks for (Keelson). */
  pool: "keelson.io/address-pool",
  /** The sharing key (Keelson). */
  sharing: "keelson.io/allow-shared-ip",
  /** The pool the Service's addresses came from; written by the service controller. */
  allocatedFromPool: "keelson.io/allocated-from-pool",
} as const;

/**
 * The pool a Service's addresses came from, as the load balancer recorded it on the Service.
 * @param service the Service
 * @returns the pool name as written (unvalidated: escape it before printing), or undefined
 */
export function recordedPool(service: V1Service): string | undefined {
  return service.metadata?.annotations?.[ANNOTATIONS.allocatedFromPool];
}

/** Where requested addresses are read from, highest precedence first. */
export const IP_SOURCES: readonly string[] = [
  ANNOTATIONS.ips,
  "metallb.io/loadBalancerIPs",
  "metallb.universe.tf/loadBalancerIPs",
  "kube-vip.io/loadbalancerIPs",
];
/** Where the pool is read from, highest precedence first. */
export const POOL_SOURCES: readonly string[] = [
  ANNOTATIONS.pool,
  "metallb.io/address-pool",
  "metallb.universe.tf/address-pool",
];
/** Where the sharing key is read from, highest precedence first. */
export const SHARING_SOURCES: readonly string[] = [
  ANNOTATIONS.sharing,
  "metallb.io/allow-shared-ip",
  "metallb.universe.tf/allow-shared-ip",
];

/** `spec.ipFamilyPolicy`; absent means SingleStack, as the API server defaults it. */
export type FamilyPolicy = "SingleStack" | "PreferDualStack" | "RequireDualStack";

/** A requested address. */
export interface RequestedIp {
  family: IpFamily;
  value: bigint;
  /** Canonical text (RFC 5952 for IPv6). */
  text: string;
}

/** What decides whether two Services may share one address (MetalLB's rules). */
export interface SharingProfile {
  /** The sharing key; undefined = the Service shares with nobody. */
  key: string | undefined;
  /** `PROTOCOL/port` of every Service port. */
  ports: readonly string[];
  /** For `externalTrafficPolicy: Local`, the sorted selector; "" otherwise. */
  backendKey: string;
}

/** A Service's request, parsed. */
export interface ServiceRequest {
  /** `namespace/name`. */
  serviceKey: string;
  namespace: string;
  /** `metadata.labels`, for pools' Service selectors. */
  labels: Readonly<Record<string, string>>;
  /** Requested addresses (0, 1 or one per family). */
  ips: readonly RequestedIp[];
  /** Where `ips` came from (annotation name or `spec.loadBalancerIP`), for messages. */
  ipsSource: string | undefined;
  /** The requested pool. */
  pool: string | undefined;
  /** Families in order of preference; from `spec.ipFamilies`, else IPv4 then IPv6. */
  families: readonly IpFamily[];
  policy: FamilyPolicy;
  sharing: SharingProfile;
}

/** The result of reading a Service. */
export type RequestResult =
  | { ok: true; request: ServiceRequest }
  | { ok: false; reason: "InvalidRequest"; message: string };

/**
 * Reads what a Service asks for.
 * @param service the Service (any type; the caller filters LoadBalancer Services)
 * @returns the parsed request, or `InvalidRequest` with a message naming the field and value
 */
export function readServiceRequest(service: V1Service): RequestResult {
  const serviceKey = objectKey(service);
  const namespace = service.metadata?.namespace ?? "default";
  const annotations = service.metadata?.annotations ?? {};
  const fail = (detail: string): RequestResult => ({
    ok: false,
    reason: "InvalidRequest",
    message: `Cannot allocate an address for service "${serviceKey}": ${detail}`,
  });

  // requested addresses: every present source must agree; the first present one is quoted
  let ips: RequestedIp[] = [];
  let ipsSource: string | undefined;
  const sources: [string, string | undefined][] = [
    ...IP_SOURCES.map((name): [string, string | undefined] => [name, annotations[name]]),
    ["spec.loadBalancerIP", service.spec?.loadBalancerIP],
  ];
  for (const [source, raw] of sources) {
    if (raw === undefined || raw.trim() === "") continue;
    const what = source.startsWith("spec.") ? source : `annotation "${source}"`;
    const parsed: RequestedIp[] = [];
    for (const part of raw.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
      const ip = parseIp(part);
      if (!ip) return fail(`${what} holds "${part}", which is not an IP address`);
      const text = formatIp(ip.family, ip.value);
      if (parsed.some((p) => p.text === text)) return fail(`${what} names "${text}" twice`);
      parsed.push({ family: ip.family, value: ip.value, text });
    }
    if (parsed.length > 2 || (parsed.length === 2 && parsed[0]!.family === parsed[1]!.family)) {
      return fail(`${what} holds "${raw}"; at most one IPv4 and one IPv6 address are allowed`);
    }
    if (ipsSource === undefined) {
      [ips, ipsSource] = [parsed, what];
    } else if (!sameTexts(ips, parsed)) {
      return fail(
        `${ipsSource} asks for "${texts(ips)}" but ${what} asks for "${texts(parsed)}"; ` +
          "remove one of them or make them agree",
      );
    }
  }

  const pool = firstAgreeing(annotations, POOL_SOURCES);
  if ("error" in pool) return fail(pool.error);
  const sharingKey = firstAgreeing(annotations, SHARING_SOURCES);
  if ("error" in sharingKey) return fail(sharingKey.error);

  const policy = service.spec?.ipFamilyPolicy ?? "SingleStack";
  if (policy !== "SingleStack" && policy !== "PreferDualStack" && policy !== "RequireDualStack") {
    return fail(
      `spec.ipFamilyPolicy is "${policy}"; allowed: SingleStack, PreferDualStack, RequireDualStack`,
    );
  }
  let families: IpFamily[];
  const specFamilies = service.spec?.ipFamilies ?? [];
  if (specFamilies.length > 0) {
    families = [];
    for (const f of specFamilies) {
      if (f !== "IPv4" && f !== "IPv6") {
        return fail(`spec.ipFamilies holds "${f}"; allowed: IPv4, IPv6`);
      }
      const family = f === "IPv4" ? 4 : 6;
      // the API server refuses it too; a snapshot may hold it, and it would yield one address twice
      if (families.includes(family)) {
        return fail(`spec.ipFamilies lists ${f} twice; list each family at most once`);
      }
      families.push(family);
    }
    for (const ip of ips) {
      if (!families.includes(ip.family)) {
        return fail(
          `${ipsSource} asks for IPv${ip.family} address "${ip.text}" but spec.ipFamilies is ` +
            `[${specFamilies.join(", ")}]`,
        );
      }
    }
  } else {
    // snapshots may lack the API server's defaulting: requested families first, then v4, v6
    families = [...new Set<IpFamily>([...ips.map((ip) => ip.family), 4, 6])];
  }
  if (policy === "SingleStack" && ips.length > 1) {
    return fail(`${ipsSource} asks for "${texts(ips)}" but spec.ipFamilyPolicy is SingleStack`);
  }
  if (policy === "RequireDualStack" && ips.length === 1) {
    return fail(
      `${ipsSource} asks for only "${texts(ips)}" but spec.ipFamilyPolicy is RequireDualStack`,
    );
  }

  const ports: string[] = [];
  for (const port of service.spec?.ports ?? []) {
    if (!Number.isInteger(port.port) || port.port < 1 || port.port > 65535) {
      return fail(`spec.ports holds port "${port.port}"; allowed: 1-65535`);
    }
    ports.push(`${port.protocol ?? "TCP"}/${port.port}`);
  }
  const selector = service.spec?.selector ?? {};
  const backendKey = service.spec?.externalTrafficPolicy === "Local"
    ? Object.keys(selector).sort().map((k) => `${k}=${selector[k]}`).join(",")
    : "";

  return {
    ok: true,
    request: {
      serviceKey,
      namespace,
      labels: { ...service.metadata?.labels },
      ips,
      ipsSource,
      pool: pool.value,
      families,
      policy,
      sharing: { key: sharingKey.value, ports, backendKey },
    },
  };
}

/**
 * The value of the first present annotation among `names`, checking the others agree.
 * @returns the value (undefined when none is set), or an error sentence
 */
function firstAgreeing(
  annotations: Record<string, string>,
  names: readonly string[],
): { value: string | undefined } | { error: string } {
  let found: [string, string] | undefined;
  for (const name of names) {
    const value = annotations[name]?.trim();
    if (value === undefined || value === "") continue;
    if (!found) found = [name, value];
    else if (found[1] !== value) {
      return {
        error: `annotation "${found[0]}" is "${found[1]}" but annotation "${name}" is ` +
          `"${value}"; remove one of them or make them agree`,
      };
    }
  }
  return { value: found?.[1] };
}

function texts(ips: readonly RequestedIp[]): string {
  return ips.map((ip) => ip.text).join(",");
}

function sameTexts(a: readonly RequestedIp[], b: readonly RequestedIp[]): boolean {
  const sa = a.map((ip) => ip.text).sort(), sb = b.map((ip) => ip.text).sort();
  return sa.length === sb.length && sa.every((t, i) => t === sb[i]);
}
