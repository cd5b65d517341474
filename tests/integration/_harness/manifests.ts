/**
 * Reads Keelson's deploy manifests (multi-document YAML) and sends each object to the REST
 * collection of its kind, as `kubectl create` would, for the RBAC and manifest tests.
 *
 * @module
 */
import { parseAllDocuments } from "yaml";
import type { ControlPlane, KubeResponse } from "./control_plane.ts";

/** The fields of a manifest object these tests use. */
export interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

/** Kind → plural resource and whether it lives in a namespace, for the kinds in deploy/. */
const RESOURCES: Record<string, { plural: string; namespaced: boolean }> = {
  Namespace: { plural: "namespaces", namespaced: false },
  ServiceAccount: { plural: "serviceaccounts", namespaced: true },
  ConfigMap: { plural: "configmaps", namespaced: true },
  Secret: { plural: "secrets", namespaced: true },
  Service: { plural: "services", namespaced: true },
  ClusterRole: { plural: "clusterroles", namespaced: false },
  ClusterRoleBinding: { plural: "clusterrolebindings", namespaced: false },
  Role: { plural: "roles", namespaced: true },
  RoleBinding: { plural: "rolebindings", namespaced: true },
  Deployment: { plural: "deployments", namespaced: true },
  DaemonSet: { plural: "daemonsets", namespaced: true },
  PodDisruptionBudget: { plural: "poddisruptionbudgets", namespaced: true },
  ValidatingAdmissionPolicy: { plural: "validatingadmissionpolicies", namespaced: false },
  ValidatingAdmissionPolicyBinding: {
    plural: "validatingadmissionpolicybindings",
    namespaced: false,
  },
};

/**
 * Parses every non-empty document of a YAML file.
 * @param path the file
 * @returns the objects in file order
 * @throws {Error} naming the file on a YAML error or a document without apiVersion/kind/name
 */
export async function loadManifests(path: string): Promise<ManifestObject[]> {
  const documents = parseAllDocuments(await Deno.readTextFile(path));
  const objects: ManifestObject[] = [];
  for (const [index, document] of documents.entries()) {
    if (document.errors.length > 0) {
      throw new Error(`${path}: document ${index + 1}: ${document.errors[0]!.message}`);
    }
    const object = document.toJS() as ManifestObject | null;
    if (object === null) continue;
    if (!object.apiVersion || !object.kind || !object.metadata?.name) {
      throw new Error(`${path}: document ${index + 1} lacks apiVersion, kind or metadata.name`);
    }
    objects.push(object);
  }
  return objects;
}

/**
 * The collection URL path an object is created at, e.g. `/apis/apps/v1/namespaces/x/deployments`.
 * @param object the manifest object
 * @returns the path
 * @throws {Error} for a kind this table does not know
 */
export function collectionPath(object: ManifestObject): string {
  const resource = RESOURCES[object.kind];
  if (!resource) throw new Error(`No REST path known for kind ${object.kind}`);
  const prefix = object.apiVersion.includes("/") ? `/apis/${object.apiVersion}` : "/api/v1";
  const namespace = resource.namespaced
    ? `/namespaces/${object.metadata.namespace ?? "default"}`
    : "";
  return `${prefix}${namespace}/${resource.plural}`;
}

/**
 * Creates one object as the admin.
 * @param cp the control plane
 * @param object the manifest object
 * @param dryRun `?dryRun=All`: validated and admitted, not stored
 * @returns the apiserver's answer (status and body)
 */
export function createObject(
  cp: ControlPlane,
  object: ManifestObject,
  dryRun = false,
): Promise<KubeResponse<unknown>> {
  const query = dryRun ? "?dryRun=All&fieldValidation=Strict" : "?fieldValidation=Strict";
  return cp.request("POST", `${collectionPath(object)}${query}`, object);
}

/** `Kind namespace/name` for messages. */
export function describeObject(object: ManifestObject): string {
  const ns = object.metadata.namespace ? `${object.metadata.namespace}/` : "";
  return `${object.kind} ${ns}${object.metadata.name}`;
}
