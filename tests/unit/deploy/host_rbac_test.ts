/**
 * The access of a worker in host-side mode (deploy/rbac-host.yaml, deploy/rbac-host-worker.yaml)
 * is a strict subset of the control plane's (deploy/rbac.yaml), and covers every request the
 * host-side code makes: the informers host-side mode starts, the heartbeat's Lease writes and the
 * host's Events, recorded from the code itself and judged by RBAC's rules (verbs, resources,
 * namespaces and resourceNames). tests/integration/host_rbac_test.ts proves the same against a
 * real kube-apiserver.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { Registry } from "prom-client";
import { createClusterCaches } from "../../../src/agent/cluster_caches.ts";
import { hostReport } from "../../../src/agent/heartbeat.ts";
import { HostHeartbeat } from "../../../src/agent/host_heartbeat.ts";
import type { AgentMode } from "../../../src/config/agent_mode.ts";
import { createEventSink } from "../../../src/kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../../../src/kube/event_recorder.ts";
import type { KubeClient } from "../../../src/kube/kube_client.ts";
import { createLeaseApi } from "../../../src/kube/lease_api.ts";
import { KubeApiError } from "../../../src/kube/ports.ts";
import type { RestApi } from "../../../src/kube/rest_api.ts";
import { HEARTBEAT_NAMESPACE } from "../../../src/status/host_report.ts";
import { pollUntil } from "../../_support/poll.ts";

const DEPLOY = new URL("../../../deploy/", import.meta.url);
/** The worker deploy/rbac-host-worker.yaml is written for. */
const WORKER = "worker-1";

/** One permission: a verb on a resource, where (`*`: every namespace) and on which name (`*`). */
interface Grant {
  namespace: string;
  group: string;
  resource: string;
  verb: string;
  name: string;
}

/** One request, as RBAC sees it. */
type Request = Omit<Grant, "name"> & { name?: string };

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

interface RbacObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Rule[];
}

/** The grants of the ClusterRoles and Roles of some deploy/ files (every one is bound there). */
async function grantsOf(...files: string[]): Promise<Grant[]> {
  const grants: Grant[] = [];
  for (const file of files) {
    const text = await Deno.readTextFile(new URL(file, DEPLOY));
    for (const document of parseAllDocuments(text)) {
      const object = document.toJS() as RbacObject | null;
      if (!object || (object.kind !== "ClusterRole" && object.kind !== "Role")) continue;
      const namespace = object.kind === "Role" ? object.metadata.namespace! : "*";
      for (const rule of object.rules ?? []) {
        for (const group of rule.apiGroups) {
          for (const resource of rule.resources) {
            for (const verb of rule.verbs) {
              for (const name of rule.resourceNames ?? ["*"]) {
                grants.push({ namespace, group, resource, verb, name });
              }
            }
          }
        }
      }
    }
  }
  assert.ok(grants.length > 0, `${files.join(", ")} grant something`);
  return grants;
}

/** Whether a grant allows a request (RBAC: a named grant never allows a request without name). */
function allows(grant: Grant, request: Request): boolean {
  return (grant.namespace === "*" || grant.namespace === request.namespace) &&
    grant.group === request.group && grant.resource === request.resource &&
    grant.verb === request.verb && (grant.name === "*" || grant.name === request.name);
}

/** Whether a grant is within another (at most as wide in every respect). */
function within(narrow: Grant, wide: Grant): boolean {
  return (wide.namespace === "*" || wide.namespace === narrow.namespace) &&
    wide.group === narrow.group && wide.resource === narrow.resource &&
    wide.verb === narrow.verb && (wide.name === "*" || wide.name === narrow.name);
}

const show = (g: Request) =>
  `${g.verb} ${g.group || "core"}/${g.resource}${
    g.name && g.name !== "*" ? `/${g.name}` : ""
  } in ${g.namespace}`;

/**
 * A request path as RBAC reads it: `/api/v1/[namespaces/<ns>/]<resource>[/<name>[/<sub>]]` or
 * `/apis/<group>/<version>/...`.
 */
function parsePath(method: string, path: string, watch = false): Request {
  const parts = path.split("?")[0]!.split("/").filter(Boolean);
  const group = parts[0] === "api" ? "" : parts[1]!;
  let rest = parts.slice(parts[0] === "api" ? 2 : 3);
  let namespace = "*";
  if (rest[0] === "namespaces" && rest.length > 2) {
    namespace = rest[1]!;
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  const verb = watch ? "watch" : {
    GET: name === undefined ? "list" : "get",
    POST: "create",
    PUT: "update",
    PATCH: "patch",
    DELETE: "delete",
  }[method]!;
  return {
    namespace,
    group,
    resource: subresource ? `${resource}/${subresource}` : resource!,
    verb,
    ...(name === undefined ? {} : { name }),
  };
}

/** A client that records every request; lists are empty, watches wait for their signal. */
function recordingClient(): { client: KubeClient; requests: Request[] } {
  const requests: Request[] = [];
  const leases = new Map<string, unknown>();
  const rest = {
    get: (path: string) => {
      requests.push(parsePath("GET", path));
      const stored = leases.get(path);
      return stored
        ? Promise.resolve(structuredClone(stored))
        : Promise.reject(new KubeApiError("not found", { code: 404, reason: "NotFound" }));
    },
    create: <T>(path: string, body: T) => {
      requests.push(parsePath("POST", path));
      const name = (body as { metadata?: { name?: string } }).metadata?.name;
      const stored = {
        ...body,
        metadata: { ...(body as object as { metadata: object }).metadata, resourceVersion: "1" },
      };
      leases.set(`${path}/${name}`, stored);
      return Promise.resolve(stored as T);
    },
    replace: <T>(path: string, body: T) => {
      requests.push(parsePath("PUT", path));
      leases.set(path, body);
      return Promise.resolve(body);
    },
    patch: <T>(path: string, body: T) => {
      requests.push(parsePath("PATCH", path));
      return Promise.resolve(body);
    },
    delete: (path: string) => {
      requests.push(parsePath("DELETE", path));
      return Promise.resolve();
    },
  } as unknown as RestApi;
  const client = {
    source: "test",
    rest,
    list: (path: string) => {
      requests.push(parsePath("GET", path));
      return Promise.resolve({ items: [], resourceVersion: "1", ignored: 0 });
    },
    watch: (path: string, options?: { signal?: AbortSignal }) => {
      requests.push(parsePath("GET", path, true));
      // no event: the stream ends when the informer stops
      const signal = options?.signal;
      const ended = async () => {
        if (signal && !signal.aborted) {
          await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        }
        return { done: true as const, value: undefined };
      };
      return { [Symbol.asyncIterator]: () => ({ next: ended }) };
    },
    close: () => {},
  } as unknown as KubeClient;
  return { client, requests };
}

/** The informers' requests of one mode, once each has listed and begun to watch. */
async function informerRequests(mode: AgentMode): Promise<Request[]> {
  const { client, requests } = recordingClient();
  const caches = createClusterCaches(client, new Registry(), mode);
  const stop = new AbortController();
  const running = caches.run(stop.signal);
  try {
    await pollUntil(`the ${mode} informers synced`, () => caches.synced());
    await pollUntil(
      "every informer watching",
      () => requests.filter((r) => r.verb === "watch").length === requests.length / 2,
    );
  } finally {
    stop.abort();
    await running;
  }
  return requests;
}

/** The heartbeat's requests: its first write (read, create), then a renewal (read, update). */
async function heartbeatRequests(): Promise<Request[]> {
  const { client, requests } = recordingClient();
  const heartbeat = new HostHeartbeat({
    leases: createLeaseApi(client.rest),
    host: WORKER,
    namespace: HEARTBEAT_NAMESPACE,
    node: () => ({ uid: "uid-1" }),
    report: () =>
      Promise.resolve(hostReport({
        host: WORKER,
        dataPlane: undefined,
        reloads: { lastReloadSucceeded: () => true, lastSuccessAt: () => new Date(0) },
      })),
  });
  await heartbeat.writeOnce();
  await heartbeat.writeOnce();
  return requests;
}

/** The host's Event recorder: one Event, then the same again (aggregated: a patch). */
async function eventRequests(): Promise<Request[]> {
  const { client, requests } = recordingClient();
  const recorder = new AggregatingEventRecorder(createEventSink(client), {
    component: "keelson",
    host: WORKER,
  });
  const service = { kind: "Service", metadata: { name: "web", namespace: "shop", uid: "u" } };
  recorder.event(service, "Normal", "VipAnnounced", "announcing 192.0.2.1");
  await recorder.flush();
  recorder.event(service, "Normal", "VipAnnounced", "announcing 192.0.2.1");
  await recorder.flush();
  await recorder.close();
  return requests;
}

Deno.test("rbac-host: every grant is within deploy/rbac.yaml's, and rbac.yaml grants more", async () => {
  const full = await grantsOf("rbac.yaml");
  const narrow = await grantsOf("rbac-host.yaml", "rbac-host-worker.yaml");
  const wider = narrow.filter((n) => !full.some((f) => within(n, f)));
  assert.deepEqual(wider.map(show), [], "grants the control plane's access lacks");
  const beyond = full.filter((f) => !narrow.some((n) => within(f, n)));
  for (
    const what of [
      "patch core/nodes in *",
      "update core/nodes in *",
      "delete core/nodes in *",
      "patch core/nodes/status in *",
      "patch core/services/status in *",
      "list core/persistentvolumes in *",
      "delete core/pods in *",
      "list core/pods in *",
      "list coordination.k8s.io/leases in kube-system",
      "update coordination.k8s.io/leases in kube-system",
      "list coordination.k8s.io/leases in kube-node-lease",
    ]
  ) {
    assert.ok(beyond.map(show).includes(what), `the worker's access lacks ${what}`);
  }
});

Deno.test("rbac-host: a worker may read, update and delete only its own heartbeat by name", async () => {
  const narrow = await grantsOf("rbac-host.yaml", "rbac-host-worker.yaml");
  const leases = narrow.filter((g) => g.resource === "leases");
  assert.deepEqual(leases.map(show).sort(), [
    `create coordination.k8s.io/leases in kube-system`,
    `delete coordination.k8s.io/leases/keelson-host-${WORKER} in kube-system`,
    `get coordination.k8s.io/leases/keelson-host-${WORKER} in kube-system`,
    `update coordination.k8s.io/leases/keelson-host-${WORKER} in kube-system`,
  ]);
});

Deno.test("rbac-host: every request host-side mode makes is allowed; none of the leader's PersistentVolumes", async () => {
  const narrow = await grantsOf("rbac-host.yaml", "rbac-host-worker.yaml");
  const informers = await informerRequests("host-side");
  const requests = [...informers, ...await heartbeatRequests(), ...await eventRequests()];
  const refused = requests.filter((r) => !narrow.some((g) => allows(g, r)));
  assert.deepEqual(refused.map(show), [], "requests rbac-host.yaml does not allow");
  // the recording saw what each part does, not nothing
  const made = new Set(requests.map((r) => `${r.verb} ${r.resource}`));
  for (
    const what of [
      "list nodes",
      "watch nodes",
      "list services",
      "watch services",
      "list endpointslices",
      "watch endpointslices",
      "get leases",
      "create leases",
      "update leases",
      "create events",
      "patch events",
    ]
  ) {
    assert.ok(made.has(what), `host-side mode made no "${what}": ${[...made].join(", ")}`);
  }
  assert.ok(!informers.some((r) => r.resource === "persistentvolumes"), informers.map(show).join());
  // where the controllers may run, the PersistentVolumes are listed: the recording would see it
  const full = await informerRequests("full");
  assert.ok(full.some((r) => r.resource === "persistentvolumes" && r.verb === "list"));
});
