/**
 * The Redfish client's failure reasons name the real failure: a BMC that completes a verified TLS
 * handshake and then closes the connection is a BMC that hung up, not a certificate that does not
 * verify (before, rustls' "peer closed connection without sending TLS close_notify" matched
 * "tls" and was reported as one), while a certificate from another CA is still one.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import tls from "node:tls";
import {
  RedfishClient,
  RedfishError,
} from "../../../../../providers/baremetal/power/redfish_client.ts";

const TESTDATA = new URL("../../../server/testdata/", import.meta.url);
const read = (name: string) => Deno.readTextFile(new URL(name, TESTDATA));
const CREDENTIALS = { username: "admin", password: "s3cret-password" };

/** A loopback TLS server (the test CA's leaf for 127.0.0.1) that hangs up after each handshake. */
async function hangingUpServer() {
  const cert = await read("tls_cert.pem");
  const server = tls.createServer({ cert, key: await read("tls_key.pem") }, (socket) => {
    socket.on("error", () => {});
    socket.destroy();
  });
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    fingerprint: new X509Certificate(cert).fingerprint256,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function failure(client: RedfishClient, caPem?: string): Promise<RedfishError> {
  const error = await client.readPower(
    { ...CREDENTIALS, ...(caPem ? { caPem } : {}) },
    AbortSignal.timeout(20_000),
  ).then(() => undefined, (e) => e);
  assert.ok(error instanceof RedfishError, `expected a RedfishError, got ${error}`);
  return error;
}

Deno.test("a BMC that closes the connection after a verified handshake is reported as such, not as a certificate", async () => {
  const server = await hangingUpServer();
  try {
    const target = {
      endpoint: server.endpoint,
      system: "/redfish/v1/Systems/1",
      serial: "w-1",
      timeoutMs: 10_000,
    };
    // verified against ca_file (Deno's fetch): the certificate verifies, then the BMC hangs up
    const verified = await failure(new RedfishClient(target), await read("ca.pem"));
    assert.equal(verified.reason, "unreachable", verified.message);
    assert.match(verified.message, /the BMC closed the connection without answering/);
    assert.doesNotMatch(verified.message, /does not verify/);
    // pinned (node:tls): the pin matches, then the BMC hangs up
    const pinned = await failure(
      new RedfishClient({ ...target, certificateSha256: server.fingerprint }),
    );
    assert.equal(pinned.reason, "unreachable", pinned.message);
    assert.match(pinned.message, /the BMC closed the connection without answering/);
    // the certificate checked against a CA that did not sign it is still a certificate failure
    const otherCa = await read("tls_cert.pem");
    const wrong = await failure(new RedfishClient(target), otherCa);
    assert.equal(wrong.reason, "tls", wrong.message);
    assert.match(wrong.message, /the BMC's certificate does not verify against ca_file/);
  } finally {
    await server.close();
  }
});
