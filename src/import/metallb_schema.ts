/**
 * MetalLB's resources as `kubectl get ipaddresspools,l2advertisements,bgpadvertisements,bgppeers,
 * communities,bfdprofiles -A -o yaml` prints them (metallb.io/v1beta1; BGPPeer also v1beta2, the
 * version the API server stores and prints): every spec field of MetalLB's CRD types, with its
 * type. A field this importer does not know (a newer MetalLB) is kept and reported in a comment.
 *
 * @module
 */
import * as z from "zod/v4";

const text = z.string().max(4096);
const name = z.string().max(253);
const list = <T extends z.ZodType>(item: T) => z.array(item).max(10_000).nullish();

/** `metav1.LabelSelector`. */
export const LabelSelectorSchema = z.looseObject({
  matchLabels: z.record(text, text).nullish(),
  matchExpressions: z.array(z.looseObject({
    key: text,
    operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]),
    values: z.array(text).max(1000).nullish(),
  })).max(100).nullish(),
});
/** A validated label selector. */
export type MetallbSelector = z.infer<typeof LabelSelectorSchema>;

const metadata = z.looseObject({
  name: name.min(1, "is missing"),
  namespace: name.optional(),
  labels: z.record(text, text).nullish(),
});

/** A `metav1.Duration` as the API prints it: "90s", "1m30s", "500ms". */
const duration = z.string().max(64);

/** IPAddressPool `spec.serviceAllocation`. */
export const ServiceAllocationSchema = z.looseObject({
  priority: z.number().int().nullish(),
  namespaces: list(name),
  namespaceSelectors: list(LabelSelectorSchema),
  serviceSelectors: list(LabelSelectorSchema),
});

/** IPAddressPool `spec`. */
export const IpAddressPoolSpecSchema = z.looseObject({
  addresses: z.array(text).min(1, "holds no address").max(100_000),
  autoAssign: z.boolean().nullish(),
  avoidBuggyIPs: z.boolean().nullish(),
  serviceAllocation: ServiceAllocationSchema.nullish(),
});

/** L2Advertisement `spec`. */
export const L2AdvertisementSpecSchema = z.looseObject({
  ipAddressPools: list(name),
  ipAddressPoolSelectors: list(LabelSelectorSchema),
  nodeSelectors: list(LabelSelectorSchema),
  interfaces: list(text),
  serviceSelectors: list(LabelSelectorSchema),
  preferredNodeSelectors: list(z.looseObject({
    weight: z.number().int(),
    preference: LabelSelectorSchema,
  })),
});

/** BGPAdvertisement `spec`. */
export const BgpAdvertisementSpecSchema = z.looseObject({
  aggregationLength: z.number().int().nullish(),
  aggregationLengthV6: z.number().int().nullish(),
  localPref: z.number().int().min(0).max(4294967295).nullish(),
  communities: list(text),
  ipAddressPools: list(name),
  ipAddressPoolSelectors: list(LabelSelectorSchema),
  nodeSelectors: list(LabelSelectorSchema),
  peers: list(name),
  serviceSelectors: list(LabelSelectorSchema),
});

/** BGPPeer `spec` (v1beta2; v1beta1 holds a subset, with the same names). */
export const BgpPeerSpecSchema = z.looseObject({
  myASN: z.number().int().min(0).max(4294967295),
  peerASN: z.number().int().min(0).max(4294967295).nullish(),
  localASN: z.number().int().min(0).max(4294967295).nullish(),
  dynamicASN: z.enum(["internal", "external"]).nullish(),
  peerAddress: text.nullish(),
  interface: text.nullish(),
  sourceAddress: text.nullish(),
  peerPort: z.number().int().min(0).max(65535).nullish(),
  holdTime: duration.nullish(),
  keepaliveTime: duration.nullish(),
  connectTime: duration.nullish(),
  routerID: text.nullish(),
  nodeSelectors: list(LabelSelectorSchema),
  password: text.nullish(),
  passwordSecret: z.looseObject({ name: name.nullish(), namespace: name.nullish() }).nullish(),
  bfdProfile: name.nullish(),
  enableGracefulRestart: z.boolean().nullish(),
  ebgpMultiHop: z.boolean().nullish(),
  vrf: text.nullish(),
  disableMP: z.boolean().nullish(),
  dualStackAddressFamily: z.boolean().nullish(),
});

/** Community `spec`. */
export const CommunitySpecSchema = z.looseObject({
  communities: list(z.looseObject({ name: text.nullish(), value: text.nullish() })),
});

/** BFDProfile `spec`. */
export const BfdProfileSpecSchema = z.looseObject({
  receiveInterval: z.number().int().nullish(),
  transmitInterval: z.number().int().nullish(),
  detectMultiplier: z.number().int().nullish(),
  echoInterval: z.number().int().nullish(),
  echoMode: z.boolean().nullish(),
  passiveMode: z.boolean().nullish(),
  minimumTtl: z.number().int().nullish(),
});

/** One object: its metadata and its spec. */
const object = <T extends z.ZodType>(spec: T) => z.looseObject({ metadata, spec });

/** The kinds the importer reads, with their spec schemas. */
export const METALLB_KINDS = {
  IPAddressPool: object(IpAddressPoolSpecSchema),
  L2Advertisement: object(L2AdvertisementSpecSchema.prefault({})),
  BGPAdvertisement: object(BgpAdvertisementSpecSchema.prefault({})),
  BGPPeer: object(BgpPeerSpecSchema),
  Community: object(CommunitySpecSchema.prefault({})),
  BFDProfile: object(BfdProfileSpecSchema.prefault({})),
} as const;

/** The spec schema of each kind (the field list the mapping test walks). */
export const METALLB_SPECS = {
  IPAddressPool: IpAddressPoolSpecSchema,
  L2Advertisement: L2AdvertisementSpecSchema,
  BGPAdvertisement: BgpAdvertisementSpecSchema,
  BGPPeer: BgpPeerSpecSchema,
  Community: CommunitySpecSchema,
  BFDProfile: BfdProfileSpecSchema,
} as const;

export type IpAddressPool = z.infer<typeof METALLB_KINDS.IPAddressPool>;
export type L2Advertisement = z.infer<typeof METALLB_KINDS.L2Advertisement>;
export type BgpAdvertisement = z.infer<typeof METALLB_KINDS.BGPAdvertisement>;
export type BgpPeer = z.infer<typeof METALLB_KINDS.BGPPeer>;
export type Community = z.infer<typeof METALLB_KINDS.Community>;
export type BfdProfile = z.infer<typeof METALLB_KINDS.BFDProfile>;
