/**
 * Keelson's own credentials on a test control plane: deploy/rbac.yaml applied as the admin, a
 * keelson token bound to a Node (a host's credential, as `kubectl create token keelson
 * --bound-object-kind Node`), and a client certificate for a `keelson:host:<host>` user.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { fileURLToPath } from "node:url";
import type { ControlPlane } from "./control_plane.ts";
import { createObject, describeObject, loadManifests } from "./manifests.ts";
import { signedCert } from "./pki.ts";

const RBAC = fileURLToPath(new URL("../../../deploy/rbac.yaml", import.meta.url));

/** A keelson token bound to a Node (TokenRequest), as `kubectl create token --bound-object-kind Node`. */
export async function nodeBoundToken(cp: ControlPlane, node: string): Promise<string> {
  const n = await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${node}`);
  const response = await cp.requestOk<{ status: { token: string } }>(
    "POST",
    "/api/v1/namespaces/kube-system/serviceaccounts/keelson/token",
    {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: "v1", kind: "Node", name: node, uid: n.metadata!.uid },
      },
    },
  );
  return response.status.token;
}

/** A client certificate signed by the test CA (in the control plane's directory). */
export async function clientCertificate(
  cp: ControlPlane,
  user: string,
  group: string,
): Promise<{ cert: string; key: string }> {
  const name = `client-${crypto.randomUUID().slice(0, 8)}`;
  await signedCert(cp.dir, name, `/O=${group}/CN=${user}`, "extendedKeyUsage=clientAuth\n");
  return {
    cert: await Deno.readTextFile(`${cp.dir}/${name}.crt`),
    key: await Deno.readTextFile(`${cp.dir}/${name}.key`),
  };
}

/**
 * Creates every object of deploy/rbac.yaml as the admin.
 * @param cp the control plane
 * @returns "Kind namespace/name" of each object, in file order
 */
export async function applyRbac(cp: ControlPlane): Promise<string[]> {
  const applied: string[] = [];
  for (const object of await loadManifests(RBAC)) {
    const response = await createObject(cp, object);
    assert.equal(
      response.status,
      201,
      `${describeObject(object)}: ${response.status} ${JSON.stringify(response.body)}`,
    );
    applied.push(describeObject(object));
  }
  return applied;
}
