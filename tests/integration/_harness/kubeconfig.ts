/**
 * Kubeconfig files for a test control plane, one per identity, shaped like the files operators
 * hand to Keelson: a bearer token, a `tokenFile:` reference, or an embedded client certificate
 * (kubeadm's admin.conf).
 *
 * @module
 */
import { stringify } from "yaml";

/** How the kubeconfig's single user authenticates. */
export type KubeconfigUser =
  | { token: string }
  | { tokenFile: string }
  | { clientCertificatePem: string; clientKeyPem: string };

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * Writes a kubeconfig with one cluster (`keelson-test`), one user and one current context.
 * @param path the file to write
 * @param server the apiserver URL
 * @param caPem the CA certificate, embedded as `certificate-authority-data`
 * @param userName the user entry's name
 * @param user the credentials
 */
export async function writeKubeconfig(
  path: string,
  server: string,
  caPem: string,
  userName: string,
  user: KubeconfigUser,
): Promise<void> {
  let credentials: Record<string, string>;
  if ("token" in user) credentials = { token: user.token };
  else if ("tokenFile" in user) credentials = { tokenFile: user.tokenFile };
  else {
    credentials = {
      "client-certificate-data": base64(user.clientCertificatePem),
      "client-key-data": base64(user.clientKeyPem),
    };
  }
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "keelson-test",
      cluster: { server, "certificate-authority-data": base64(caPem) },
    }],
    users: [{ name: userName, user: credentials }],
    contexts: [{ name: "keelson-test", context: { cluster: "keelson-test", user: userName } }],
    "current-context": "keelson-test",
    preferences: {},
  };
  await Deno.writeTextFile(path, stringify(config), { mode: 0o600 });
}
