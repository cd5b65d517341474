/**
 * The Redfish client with `certificateSha256` against a loopback TLS server of the test's own that
 * records every byte of HTTP it receives: a matching pin reads power and sends ForceOff; a
 * certificate that does not match is refused as `tls` before a single byte of the request (and so
 * the credentials) is written; a self-signed certificate marked CA:TRUE is accepted by pin; the
 * body bound, the deadline and an unreachable port keep their reasons.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import tls from "node:tls";
import {
  MAX_REDFISH_BODY_BYTES,
  RedfishClient,
  RedfishError,
} from "../../../../../providers/baremetal/power/redfish_client.ts";

const CREDENTIALS = { username: "admin", password: "s3cret-password" };
const SYSTEM = "/redfish/v1/Systems/1";

async function openssl(dir: string, args: string[]): Promise<string> {
  const output = await new Deno.Command("openssl", { args, cwd: dir, stdin: "null" }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return new TextDecoder().decode(output.stdout);
}

/** A self-signed certificate; `ca` marks it basicConstraints CA:TRUE, as some BMCs generate. */
async function selfSigned(dir: string, name: string, ca: boolean) {
  await openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-addext",
    `basicConstraints=critical,CA:${ca ? "TRUE" : "FALSE"}`,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
  ]);
  const cert = await Deno.readTextFile(`${dir}/${name}.crt`);
  // the operator's command, as the README gives it
  const printed = await openssl(dir, [
    "x509",
    "-noout",
    "-fingerprint",
    "-sha256",
    "-in",
    `${name}.crt`,
  ]);
  const fingerprint = printed.trim().replace(/^sha256 Fingerprint=/i, "");
  assert.equal(fingerprint, new X509Certificate(cert).fingerprint256);
  return { cert, key: await Deno.readTextFile(`${dir}/${name}.key`), fingerprint };
}

/** A loopback TLS server; `received` is the decrypted bytes of each connection, when it closed. */
async function recordingServer(
  cert: { cert: string; key: string },
  answer: (request: string) => string | undefined,
) {
  const received: string[] = [];
  let connections = 0;
  const closed: Promise<void>[] = [];
  const server = tls.createServer({ cert: cert.cert, key: cert.key }, (socket) => {
    let bytes = "";
    closed.push(
      new Promise((resolve) => socket.once("close", () => (received.push(bytes), resolve()))),
    );
    socket.on("error", () => {});
    socket.on("data", (chunk: Uint8Array) => {
      bytes += new TextDecoder().decode(chunk);
      const reply = answer(bytes);
      if (reply !== undefined) socket.end(reply);
    });
  });
  // every TCP connection, including one the client closes right after its side of the handshake
  // (the server may then never see a complete handshake, so no decrypted socket at all)
  server.on("connection", (raw: { once(event: "close", f: () => void): void }) => {
    connections++;
    closed.push(new Promise((resolve) => raw.once("close", resolve)));
  });
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `https://127.0.0.1:${port}`,
    received,
    connections: () => connections,
    /** Waits for every connection so far to close. */
    settled: () => Promise.all(closed),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function json(value: unknown): string {
  const body = JSON.stringify(value);
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${
    new TextEncoder().encode(body).byteLength
  }\r\nConnection: close\r\n\r\n${body}`;
}

/** Answers a complete GET with a ComputerSystem, a complete POST with 204. */
function redfish(power: string) {
  return (request: string) => {
    const end = request.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    if (request.startsWith("GET ")) {
      return json({
        "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem",
        PowerState: power,
        Actions: { "#ComputerSystem.Reset": { target: `${SYSTEM}/Actions/ComputerSystem.Reset` } },
      });
    }
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(request)?.[1] ?? "0");
    if (new TextEncoder().encode(request.slice(end + 4)).byteLength < length) return undefined;
    return "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
  };
}

function client(endpoint: string, certificateSha256: string, timeoutMs = 5_000) {
  return new RedfishClient({
    endpoint,
    system: SYSTEM,
    serial: "w-1",
    timeoutMs,
    certificateSha256,
  });
}

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "keelson-pinned-" });
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("pinned BMC: the matching certificate (self-signed, CA:TRUE) reads power and sends ForceOff", async () => {
  await withDir(async (dir) => {
    const bmc = await selfSigned(dir, "bmc", true);
    const server = await recordingServer(bmc, redfish("On"));
    try {
      const pinned = client(server.endpoint, bmc.fingerprint);
      const signal = AbortSignal.timeout(30_000);
      assert.deepEqual(await pinned.readPower(CREDENTIALS, signal), {
        state: "on",
        detail: 'PowerState "On"',
        system: SYSTEM,
      });
      await pinned.forceOff(CREDENTIALS, signal);
      await server.settled();
      const auth = `authorization: Basic ${btoa("admin:s3cret-password")}`;
      assert.equal(server.received.length, 3); // GET; GET and POST for ForceOff
      assert.match(server.received[0]!, new RegExp(`^GET ${SYSTEM} HTTP/1.1\r\n`));
      assert.ok(server.received[0]!.toLowerCase().includes(auth.toLowerCase()));
      const post = server.received[2]!;
      assert.match(post, /^POST \/redfish\/v1\/Systems\/1\/Actions\/ComputerSystem.Reset HTTP/);
      assert.match(post, /\r\ncontent-length: 24\r\n/i);
      assert.ok(post.endsWith('\r\n\r\n{"ResetType":"ForceOff"}'), post);
    } finally {
      await server.close();
    }
  });
});

Deno.test("pinned BMC: another certificate is refused as tls, and the server receives zero bytes of HTTP", async () => {
  await withDir(async (dir) => {
    const pinnedCert = await selfSigned(dir, "pinned", false);
    const other = await selfSigned(dir, "other", false);
    const server = await recordingServer(other, redfish("Off"));
    try {
      const error = await client(server.endpoint, pinnedCert.fingerprint)
        .readPower(CREDENTIALS, AbortSignal.timeout(30_000))
        .then(() => undefined, (e) => e);
      assert.ok(error instanceof RedfishError, String(error));
      assert.equal(error.reason, "tls");
      assert.ok(error.message.includes(other.fingerprint), error.message);
      assert.ok(error.message.includes(`not certificate_sha256 ${pinnedCert.fingerprint}`));
      await server.settled();
      // the client connected (so the refusal was the pin's), then wrote no byte of HTTP
      assert.equal(server.connections(), 1);
      assert.equal(server.received.join(""), "");
      // and ForceOff is refused the same way, before its GET
      await assert.rejects(
        client(server.endpoint, pinnedCert.fingerprint)
          .forceOff(CREDENTIALS, AbortSignal.timeout(30_000)),
        (e) => e instanceof RedfishError && e.reason === "tls",
      );
      await server.settled();
      assert.equal(server.connections(), 2);
      assert.equal(server.received.join(""), "");
    } finally {
      await server.close();
    }
  });
});

Deno.test("pinned BMC: an answer over the bound is not Redfish, silence is a timeout, a closed port is unreachable", async () => {
  await withDir(async (dir) => {
    const bmc = await selfSigned(dir, "bmc", false);
    const huge = await recordingServer(
      bmc,
      (request) =>
        request.includes("\r\n\r\n")
          ? json({ pad: "x".repeat(MAX_REDFISH_BODY_BYTES + 1) })
          : undefined,
    );
    const silent = await recordingServer(bmc, () => undefined);
    try {
      await assert.rejects(
        client(huge.endpoint, bmc.fingerprint).readPower(CREDENTIALS, AbortSignal.timeout(30_000)),
        (e) =>
          e instanceof RedfishError && e.reason === "not_redfish" && /larger than/.test(e.message),
      );
      await assert.rejects(
        client(silent.endpoint, bmc.fingerprint, 300)
          .readPower(CREDENTIALS, AbortSignal.timeout(30_000)),
        (e) => e instanceof RedfishError && e.reason === "timeout",
      );
    } finally {
      await huge.close();
      await silent.close();
    }
    // the port the silent server had is closed now
    await assert.rejects(
      client(silent.endpoint, bmc.fingerprint).readPower(CREDENTIALS, AbortSignal.timeout(30_000)),
      (e) => e instanceof RedfishError && e.reason === "unreachable",
    );
  });
});
