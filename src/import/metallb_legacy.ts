/**
 * MetalLB configuration older than its custom resources, read as the resources MetalLB itself
 * made of it: the `config` ConfigMap of MetalLB 0.12 and earlier (the ConfigMap, or its `config`
 * text alone) converted as MetalLB's configmaptocrs does, and MetalLB 0.13's `AddressPool` (one
 * object holding the addresses, the protocol and the BGP advertisements) split as 0.13 did. The
 * objects made keep the place of the field they came from, so a problem names that line. Pure.
 *
 * @module
 */
import {
  ImportError,
  isRecord,
  readSourceDocument,
  readSourceObjects,
  type SourceDocument,
  type SourceObject,
} from "./source_objects.ts";

/** MetalLB's objects of a file, whatever version wrote them. */
export interface MetallbObjects {
  /** The objects in MetalLB's current kinds (metallb.io/v1beta1, BGPPeer v1beta2). */
  objects: SourceObject[];
  /** What was converted from an older form, one sentence each, for the inventory's header. */
  converted: string[];
}

/** The top-level keys of the pre-0.13 `config` text (MetalLB's configFile). */
const LEGACY_KEYS = ["address-pools", "peers", "bgp-communities", "bfd-profiles"];
/** A `kind` key in YAML or JSON. */
const KIND_KEY = /(?<![\w-])["']?kind["']?[ \t]*:/;
/** One of MetalLB's keys as a YAML or JSON key, for a cheap test before parsing. */
const LEGACY_KEY = new RegExp(`(?:^|[{,\\s])["']?(?:${LEGACY_KEYS.join("|")})["']?[ \\t]*:`, "m");

/** Pre-0.13 peer keys → BGPPeer spec fields (configmaptocrs' parsePeer). */
const PEER_FIELDS: Readonly<Record<string, string>> = {
  "my-asn": "myASN",
  "peer-asn": "peerASN",
  "peer-address": "peerAddress",
  "source-address": "sourceAddress",
  "peer-port": "peerPort",
  "hold-time": "holdTime",
  "keepalive-time": "keepaliveTime",
  "router-id": "routerID",
  "node-selectors": "nodeSelectors",
  password: "password",
  "bfd-profile": "bfdProfile",
  "ebgp-multihop": "ebgpMultiHop",
};
const POOL_FIELDS: Readonly<Record<string, string>> = {
  addresses: "addresses",
  "auto-assign": "autoAssign",
  "avoid-buggy-ips": "avoidBuggyIPs",
};
const ADVERTISEMENT_FIELDS: Readonly<Record<string, string>> = {
  "aggregation-length": "aggregationLength",
  "aggregation-length-v6": "aggregationLengthV6",
  localpref: "localPref",
  communities: "communities",
};
const BFD_FIELDS: Readonly<Record<string, string>> = {
  "receive-interval": "receiveInterval",
  "transmit-interval": "transmitInterval",
  "detect-multiplier": "detectMultiplier",
  "echo-interval": "echoInterval",
  "echo-mode": "echoMode",
  "passive-mode": "passiveMode",
  "minimum-ttl": "minimumTtl",
};
/** MetalLB's BGP hold time when a pre-0.13 peer sets none (configmaptocrs' parseHoldTime). */
const LEGACY_HOLD_TIME = "90s";

/**
 * Reads MetalLB's objects from an exported file: current resources as they are, a `config`
 * ConfigMap or its bare text, and AddressPools, converted.
 * @param text the file
 * @param source the file name for messages
 * @returns the objects and what was converted
 * @throws {ImportError} naming file, line and field
 */
export function readMetallbObjects(text: string, source: string): MetallbObjects {
  const bare = bareConfig(text, source);
  if (bare !== undefined) {
    return {
      objects: fromConfig(bare, "metallb-system"),
      converted: [
        `${source} is the text of MetalLB's config ConfigMap (MetalLB 0.12 and earlier), read ` +
        "as MetalLB's configmaptocrs converts it: one IPAddressPool per address pool, " +
        "advertisements l2advertisementN and bgpadvertisementN, peers peerN.",
      ],
    };
  }
  const objects: SourceObject[] = [];
  const converted: string[] = [];
  for (const object of readSourceObjects(text, source)) {
    const config = object.kind === "ConfigMap" && isRecord(object.value.data)
      ? object.value.data.config
      : undefined;
    // MetalLB's is named config, but so may another program's: its keys tell them apart
    const where = `${object.at(["data", "config"])} data.config`;
    const body = typeof config === "string" ? legacyDocument(config, where) : undefined;
    if (body === undefined && typeof config === "string" && object.name === "config") {
      // MetalLB's own, but not YAML: say where, rather than pass it by as another program's
      if (LEGACY_KEY.test(config)) readSourceDocument(config, where);
    }
    if (body !== undefined) {
      const namespace = namespaceOf(object);
      objects.push(...fromConfig(body, namespace));
      converted.push(
        `ConfigMap ${namespace}/${object.name} (MetalLB 0.12 and earlier) read as MetalLB's ` +
          "configmaptocrs converts it: one IPAddressPool per address pool, advertisements " +
          "l2advertisementN and bgpadvertisementN, peers peerN.",
      );
    } else if (object.kind === "AddressPool" && object.apiVersion.startsWith("metallb.io/")) {
      objects.push(...fromAddressPool(object));
      converted.push(
        `AddressPool "${object.name}" (MetalLB 0.13) read as MetalLB 0.13 did: an ` +
          "IPAddressPool and the advertisements of its protocol.",
      );
    } else objects.push(object);
  }
  return { objects, converted };
}

/** The bare `config` text: one document, a mapping with MetalLB's keys and no `kind`. */
function bareConfig(text: string, source: string): SourceDocument | undefined {
  // cheap test first: the config text has MetalLB's keys and no kind (an export has kinds)
  if (KIND_KEY.test(text) || !LEGACY_KEY.test(text)) return undefined;
  return legacyDocument(text, source);
}

/** The text parsed when it is one mapping holding MetalLB's keys (and no kind). */
function legacyDocument(text: string, source: string): SourceDocument | undefined {
  if (!LEGACY_KEY.test(text)) return undefined;
  let document: SourceDocument;
  try {
    document = readSourceDocument(text, source);
  } catch {
    return undefined; // several documents, or not YAML: read as resources, which says why
  }
  const value = document.value;
  if (!isRecord(value) || "kind" in value) return undefined;
  return LEGACY_KEYS.some((k) => k in value) ? document : undefined;
}

function namespaceOf(object: SourceObject): string {
  const metadata = object.value.metadata;
  const namespace = isRecord(metadata) ? metadata.namespace : undefined;
  return typeof namespace === "string" && namespace !== "" ? namespace : "metallb-system";
}

/** Renames the keys of a pre-0.13 mapping; keys MetalLB did not read are kept as written. */
function renamed(
  value: Record<string, unknown>,
  fields: Readonly<Record<string, string>>,
  skip: readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (skip.includes(key)) continue;
    out[fields[key] ?? key] = v;
  }
  return out;
}

/** `at` for a made object: spec fields map back to the keys they came from. */
function locate(
  document: SourceDocument,
  base: readonly PropertyKey[],
  fields: Readonly<Record<string, string>>,
): (path: readonly PropertyKey[]) => string {
  const back = new Map(Object.entries(fields).map(([k, v]) => [v, k]));
  return (path) => {
    if (path[0] !== "spec" || path.length < 2) return document.at(base);
    const key = back.get(String(path[1])) ?? String(path[1]);
    return document.at([...base, key, ...path.slice(2)]);
  };
}

function made(
  kind: string,
  name: string,
  namespace: string,
  spec: Record<string, unknown>,
  at: (path: readonly PropertyKey[]) => string,
): SourceObject {
  const apiVersion = kind === "BGPPeer" ? "metallb.io/v1beta2" : "metallb.io/v1beta1";
  return {
    kind,
    apiVersion,
    name,
    value: { apiVersion, kind, metadata: { name, namespace }, spec },
    at,
  };
}

function list(document: SourceDocument, key: string): Record<string, unknown>[] {
  const value = (document.value as Record<string, unknown>)[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    throw new ImportError(`${document.at([key])}: MetalLB config ${key}: expected a list`);
  }
  return value.map((item, i) => {
    if (!isRecord(item)) {
      throw new ImportError(
        `${document.at([key, i])}: MetalLB config ${key}[${i}]: expected a map`,
      );
    }
    return item;
  });
}

function nodeSelector(value: unknown): unknown {
  if (!isRecord(value)) return value;
  return {
    matchLabels: value["match-labels"] ?? value.matchLabels,
    matchExpressions: value["match-expressions"] ?? value.matchExpressions,
  };
}

/** The objects configmaptocrs makes of the `config` text. */
function fromConfig(document: SourceDocument, namespace: string): SourceObject[] {
  const body = document.value;
  if (!isRecord(body)) {
    throw new ImportError(`${document.at([])}: MetalLB config: expected a map of settings`);
  }
  const out: SourceObject[] = [];
  for (const key of Object.keys(body)) {
    if (LEGACY_KEYS.includes(key)) continue;
    throw new ImportError(
      `${document.at([key])}: MetalLB config ${key}: not a setting MetalLB 0.12 reads ` +
        `(it reads ${LEGACY_KEYS.join(", ")}); remove it or import from the resources`,
    );
  }
  list(document, "peers").forEach((peer, i) => {
    const spec = renamed(peer, PEER_FIELDS, []);
    spec.holdTime ??= LEGACY_HOLD_TIME;
    if (Array.isArray(spec.nodeSelectors)) {
      spec.nodeSelectors = spec.nodeSelectors.map(nodeSelector);
    }
    out.push(
      made("BGPPeer", `peer${i + 1}`, namespace, spec, locate(document, ["peers", i], PEER_FIELDS)),
    );
  });
  list(document, "bfd-profiles").forEach((profile, i) => {
    const name = typeof profile.name === "string" ? profile.name : "";
    out.push(
      made(
        "BFDProfile",
        name,
        namespace,
        renamed(profile, BFD_FIELDS, ["name"]),
        locate(document, ["bfd-profiles", i], BFD_FIELDS),
      ),
    );
  });
  const communities = body["bgp-communities"];
  if (communities !== undefined && communities !== null) {
    if (!isRecord(communities)) {
      throw new ImportError(
        `${document.at(["bgp-communities"])}: MetalLB config bgp-communities: expected a map of ` +
          "alias: value",
      );
    }
    out.push(
      made("Community", "communities", namespace, {
        communities: Object.entries(communities).map(([name, value]) => ({ name, value })),
      }, () => document.at(["bgp-communities"])),
    );
  }
  let bgpIndex = 1, l2Index = 1;
  list(document, "address-pools").forEach((pool, i) => {
    const base = ["address-pools", i];
    const name = typeof pool.name === "string" ? pool.name : "";
    const protocol = pool.protocol;
    if (protocol !== "bgp" && protocol !== "layer2") {
      throw new ImportError(
        `${document.at([...base, "protocol"])}: MetalLB config address-pools[${i}] ` +
          `("${name}") protocol: ${JSON.stringify(protocol ?? null)} is not bgp or layer2, ` +
          "the protocols MetalLB accepts",
      );
    }
    const advertisements = pool["bgp-advertisements"];
    if (protocol === "layer2" && Array.isArray(advertisements) && advertisements.length > 0) {
      throw new ImportError(
        `${document.at([...base, "bgp-advertisements"])}: MetalLB config address-pools[${i}] ` +
          `("${name}") bgp-advertisements: MetalLB refuses them in a layer2 pool; remove them`,
      );
    }
    out.push(
      made(
        "IPAddressPool",
        name,
        namespace,
        renamed(pool, POOL_FIELDS, ["name", "protocol", "bgp-advertisements"]),
        locate(document, base, POOL_FIELDS),
      ),
    );
    if (protocol === "layer2") {
      out.push(
        made("L2Advertisement", `l2advertisement${l2Index++}`, namespace, {
          ipAddressPools: [name],
        }, () => document.at([...base, "protocol"])),
      );
      return;
    }
    const ads = Array.isArray(advertisements) ? advertisements : [];
    if (ads.length === 0) {
      // a BGP pool without advertisements is announced whole, as configmaptocrs' emptyBGPAdv
      out.push(
        made("BGPAdvertisement", `bgpadvertisement${bgpIndex++}`, namespace, {
          ipAddressPools: [name],
        }, () => document.at([...base, "protocol"])),
      );
    }
    ads.forEach((ad, j) => {
      const adBase = [...base, "bgp-advertisements", j];
      if (!isRecord(ad)) {
        throw new ImportError(
          `${document.at(adBase)}: MetalLB config bgp-advertisements[${j}]: expected a map`,
        );
      }
      out.push(
        made("BGPAdvertisement", `bgpadvertisement${bgpIndex++}`, namespace, {
          ...renamed(ad, ADVERTISEMENT_FIELDS, []),
          ipAddressPools: [name],
        }, locate(document, adBase, ADVERTISEMENT_FIELDS)),
      );
    });
  });
  return out;
}

/** MetalLB 0.13's AddressPool: its IPAddressPool and the advertisements of its protocol. */
function fromAddressPool(object: SourceObject): SourceObject[] {
  const spec = isRecord(object.value.spec) ? object.value.spec : {};
  const namespace = namespaceOf(object);
  const name = object.name;
  const inSpec = (path: readonly PropertyKey[]) => object.at(path);
  const { protocol, bgpAdvertisements, ...poolSpec } = spec;
  if (protocol !== "bgp" && protocol !== "layer2") {
    throw new ImportError(
      `${object.at(["spec", "protocol"])}: AddressPool "${name}" spec.protocol: ` +
        `${JSON.stringify(protocol ?? null)} is not bgp or layer2, the protocols MetalLB accepts`,
    );
  }
  const out = [made("IPAddressPool", name, namespace, poolSpec, inSpec)];
  const ads = Array.isArray(bgpAdvertisements) ? bgpAdvertisements : [];
  if (protocol === "layer2") {
    if (ads.length > 0) {
      throw new ImportError(
        `${object.at(["spec", "bgpAdvertisements"])}: AddressPool "${name}" ` +
          "spec.bgpAdvertisements: MetalLB refuses them in a layer2 pool; remove them",
      );
    }
    out.push(
      made(
        "L2Advertisement",
        `${name}.l2`,
        namespace,
        { ipAddressPools: [name] },
        () => object.at(["spec", "protocol"]),
      ),
    );
    return out;
  }
  if (ads.length === 0) {
    out.push(
      made(
        "BGPAdvertisement",
        `${name}.bgp`,
        namespace,
        { ipAddressPools: [name] },
        () => object.at(["spec", "protocol"]),
      ),
    );
  }
  ads.forEach((ad, i) => {
    const base = ["spec", "bgpAdvertisements", i];
    out.push(
      made(
        "BGPAdvertisement",
        `${name}.bgpAdvertisements[${i}]`,
        namespace,
        { ...(isRecord(ad) ? ad : {}), ipAddressPools: [name] },
        (path) => object.at(path[0] === "spec" ? [...base, ...path.slice(1)] : base),
      ),
    );
  });
  return out;
}
