/**
 * The health and metrics server's certificate and private key (`[server] tls_cert_file` and
 * `tls_key_file`, or `run`'s `--tls-cert-file` and `--tls-private-key-file`), read and checked the
 * one way `keelson check`, every reload and the server itself use: each file through the one file
 * reader, the common mistakes (files swapped, an encrypted key, a certificate that does not
 * parse) named in words, then the pair handed to the TLS library the server uses (Deno's rustls,
 * through `Deno.createHttpClient`, which loads a certificate and key exactly as `Deno.serve` does
 * and needs no permission), so a pair `check` accepts is one the server can serve with.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import { InputFileError, osReason, PEM_FILE, readInputFile } from "../files/read_input_file.ts";
import { errorMessage } from "../log/error_message.ts";

/** The certificate chain and key, as PEM text. */
export interface TlsKeyPair {
  cert: string;
  key: string;
}

/** Which setting names the file a problem is about. */
export type TlsFileField = "tls_cert_file" | "tls_key_file";

/** A certificate or key the server cannot serve with: which of the two, and why. */
export class TlsKeyPairError extends Error {
  /** The file the problem is about (for a pair that does not match: the key). */
  readonly field: TlsFileField;

  /**
   * @param field the setting naming the file the problem is about
   * @param message a sentence naming the file
   */
  constructor(field: TlsFileField, message: string) {
    super(message);
    this.name = "TlsKeyPairError";
    this.field = field;
  }
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n([\s\S]*?)-----END CERTIFICATE-----/g;

/**
 * Reads a certificate chain and its private key and checks that the server can serve with them.
 * @param certFile the PEM certificate chain (the server's own certificate first)
 * @param keyFile the PEM private key of that certificate, not encrypted
 * @returns both texts, as the server hands them to `Deno.serve`
 * @throws {TlsKeyPairError} naming the file and the problem: unreadable, no certificate or no
 *   key, the two files swapped, an encrypted key, a certificate that does not parse, a key of
 *   another certificate, or a key type the TLS library does not take
 */
export async function readTlsKeyPair(certFile: string, keyFile: string): Promise<TlsKeyPair> {
  const cert = await readPem("tls_cert_file", certFile);
  const key = await readPem("tls_key_file", keyFile);
  const problem = certificateChainProblem(cert) ?? keyProblem(key);
  if (problem) {
    const file = problem.field === "tls_cert_file" ? certFile : keyFile;
    throw new TlsKeyPairError(problem.field, `"${file}" ${problem.text}`);
  }
  try {
    Deno.createHttpClient({ cert, key }).close();
  } catch (error) {
    const reason = oneLine(errorMessage(error));
    if (/KeyMismatch|not be consistent/i.test(reason)) {
      throw new TlsKeyPairError(
        "tls_key_file",
        `"${keyFile}" is not the private key of the certificate in "${certFile}" (the first ` +
          "certificate of tls_cert_file must be the server's own, and tls_key_file its key)",
      );
    }
    throw new TlsKeyPairError(
      "tls_key_file",
      `"${certFile}" and "${keyFile}" cannot be served with: ${reason} (RSA, ECDSA P-256/P-384/` +
        "P-521 and Ed25519 keys in PKCS#8, PKCS#1 or SEC1 PEM are taken)",
    );
  }
  return { cert, key };
}

async function readPem(field: TlsFileField, file: string): Promise<string> {
  try {
    return await readInputFile(file, PEM_FILE);
  } catch (error) {
    const reason = error instanceof InputFileError ? error.message : osReason(error);
    throw new TlsKeyPairError(field, `cannot read "${file}": ${reason}`);
  }
}

interface Problem {
  field: TlsFileField;
  text: string;
}

const inCert = (text: string): Problem => ({ field: "tls_cert_file", text });
const inKey = (text: string): Problem => ({ field: "tls_key_file", text });

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

function certificateChainProblem(cert: string): Problem | undefined {
  const blocks = [...cert.matchAll(CERTIFICATE_BLOCK)];
  if (blocks.length === 0) {
    return inCert(
      /PRIVATE KEY-----/.test(cert)
        ? "holds a private key, not a certificate: tls_cert_file and tls_key_file look swapped"
        : "holds no PEM certificate (a line -----BEGIN CERTIFICATE-----)",
    );
  }
  for (const [index, block] of blocks.entries()) {
    try {
      new X509Certificate(block[0]);
    } catch (error) {
      const line = cert.slice(0, block.index).split("\n").length;
      return inCert(
        `holds a certificate that cannot be parsed (certificate ${index + 1}, line ${line}: ` +
          `${oneLine(errorMessage(error))})`,
      );
    }
  }
  return undefined;
}

function keyProblem(key: string): Problem | undefined {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: *4, *ENCRYPTED/.test(key)) {
    return inKey(
      "is encrypted, and Keelson asks for no passphrase: write the key decrypted (openssl pkey " +
        "-in KEY -out KEY.plain), readable only by Keelson's user",
    );
  }
  if (!/-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----/.test(key)) {
    return inKey(
      key.includes("-----BEGIN CERTIFICATE-----")
        ? "holds a certificate, not a private key: tls_cert_file and tls_key_file look swapped"
        : "holds no PEM private key (a line -----BEGIN PRIVATE KEY-----)",
    );
  }
  return undefined;
}
