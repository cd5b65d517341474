/**
 * Certificates and keys for a test control plane, made with the openssl command line: a CA, a
 * serving certificate for 127.0.0.1/localhost, an admin client certificate (group system:masters)
 * and the service-account signing key (RSA, which kube-apiserver accepts in PKCS#8 form).
 *
 * @module
 */

/** Paths (all inside the control plane's directory) of the files `writePki` made. */
export interface Pki {
  /** The CA certificate (PEM). */
  caCert: string;
  /** The CA certificate's PEM text. */
  caPem: string;
  /** The apiserver's serving certificate and key. */
  servingCert: string;
  servingKey: string;
  /** The admin client certificate and key (CN keelson-admin, O system:masters). */
  adminCert: string;
  adminKey: string;
  /** The service-account signing key (also used as the verification key). */
  serviceAccountKey: string;
}

/** The user name in the admin client certificate. */
export const ADMIN_CERT_USER = "keelson-admin";

/**
 * Runs openssl in `dir`.
 * @returns its stdout
 * @throws {Error} with its stderr when it fails
 */
export async function openssl(dir: string, args: string[]): Promise<string> {
  const output = await new Deno.Command("openssl", {
    args,
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim();
    throw new Error(`Cannot run "openssl ${args.join(" ")}": ${stderr}`);
  }
  return new TextDecoder().decode(output.stdout);
}

/**
 * A key and a certificate signed by the test CA (`ca.crt`/`ca.key` in `dir`), written as
 * `<name>.key` and `<name>.crt` in `dir`.
 * @param dir the directory holding the CA
 * @param name the files' base name
 * @param subject e.g. `/O=group/CN=user`
 * @param extensions openssl extension lines, e.g. `extendedKeyUsage=clientAuth\n`
 * @throws {Error} when openssl fails
 */
export async function signedCert(
  dir: string,
  name: string,
  subject: string,
  extensions: string,
): Promise<void> {
  await openssl(dir, [
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    subject,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
  ]);
  await Deno.writeTextFile(`${dir}/${name}.ext`, extensions);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-set_serial",
    `0x${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
    "-out",
    `${name}.crt`,
  ]);
}

/**
 * Writes the control plane's certificates and keys into `dir`.
 * @param dir the control plane's temporary directory
 * @param extraServingIps more IP SANs of the serving certificate (a test that reaches the
 *   apiserver from a network namespace)
 * @returns the paths of the files written
 * @throws {Error} when openssl is missing or fails
 */
export async function writePki(dir: string, extraServingIps: readonly string[] = []): Promise<Pki> {
  await openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=keelson-test-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
  ]);
  await Promise.all([
    signedCert(
      dir,
      "apiserver",
      "/CN=kube-apiserver",
      `subjectAltName=IP:127.0.0.1,DNS:localhost${
        extraServingIps.map((ip) => `,IP:${ip}`).join("")
      }\nextendedKeyUsage=serverAuth\n` +
        "keyUsage=critical,digitalSignature,keyEncipherment\n",
    ),
    signedCert(
      dir,
      "admin",
      `/O=system:masters/CN=${ADMIN_CERT_USER}`,
      "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
    ),
    openssl(dir, ["genrsa", "-out", "sa.key", "2048"]),
  ]);
  return {
    caCert: `${dir}/ca.crt`,
    caPem: await Deno.readTextFile(`${dir}/ca.crt`),
    servingCert: `${dir}/apiserver.crt`,
    servingKey: `${dir}/apiserver.key`,
    adminCert: `${dir}/admin.crt`,
    adminKey: `${dir}/admin.key`,
    serviceAccountKey: `${dir}/sa.key`,
  };
}
