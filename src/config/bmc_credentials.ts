/**
 * The files of a `[machines.bmc]` table — `username_file`, `password_file`, `ca_file` — read the
 * one way both `keelson check` (and every reload) and the running poller read them: a regular file
 * within its kind's size cap and a deadline, the trailing newline dropped, the value checked. A
 * password file every user of the host can read is refused as for BGP passwords.
 *
 * @module
 */
import { X509Certificate } from "node:crypto";
import type { RawIssue } from "./_schema_issues.ts";
import { modeProblem } from "./bgp_secrets.ts";
import {
  type FileKind,
  InputFileError,
  osReason,
  PEM_FILE,
  readInputFile,
} from "../files/read_input_file.ts";
import type { Config, Machine } from "./types.ts";
import { errorMessage } from "../log/error_message.ts";

/** A BMC user name or password (real ones are tens of bytes). */
export const BMC_CREDENTIAL_FILE: FileKind = {
  maxBytes: 4 * 1024,
  what: "a BMC user name or password",
};

/** The longest BMC user name or password accepted. */
export const MAX_BMC_CREDENTIAL_LENGTH = 256;

/** What Keelson sends to a BMC. */
export interface BmcCredentials {
  username: string;
  password: string;
  /** The CA certificates (PEM) the BMC's certificate must chain to; absent: the system's. */
  caPem?: string;
}

/** A `[machines.bmc]` file that cannot be used: which key names it, and why. */
export class BmcCredentialError extends Error {
  /** The key naming the file: `username_file`, `password_file` or `ca_file`. */
  readonly key: "username_file" | "password_file" | "ca_file";

  /**
   * @param key the key naming the file
   * @param message a sentence naming the file
   */
  constructor(key: BmcCredentialError["key"], message: string) {
    super(message);
    this.name = "BmcCredentialError";
    this.key = key;
  }
}

/**
 * Why a user name or password cannot be sent in a basic-auth header, or undefined when it can.
 * @param value the file's text without its trailing newline
 * @param userName whether it is the user name (which must not hold ':')
 * @returns a sentence that never quotes the value
 */
export function credentialProblem(value: string, userName: boolean): string | undefined {
  if (value.length === 0) return "is empty";
  if (value.length > MAX_BMC_CREDENTIAL_LENGTH) {
    return `is ${value.length} characters long (at most ${MAX_BMC_CREDENTIAL_LENGTH})`;
  }
  // printable ASCII: what every BMC accepts, and nothing that could end a header line
  if (!/^[\x20-\x7e]+$/.test(value)) {
    return "holds a character other than printable ASCII (or more than one line)";
  }
  if (userName && value.includes(":")) return "holds ':', which basic authentication cannot carry";
  return undefined;
}

async function readValue(
  key: "username_file" | "password_file",
  file: string,
): Promise<string> {
  let text: string;
  try {
    text = (await readInputFile(file, BMC_CREDENTIAL_FILE)).replace(/\r?\n$/, "");
  } catch (error) {
    throw new BmcCredentialError(key, `cannot read "${file}": ${reason(error)}`);
  }
  const problem = credentialProblem(text, key === "username_file");
  if (problem) throw new BmcCredentialError(key, `"${file}" ${problem}`);
  if (key === "password_file") {
    let mode: number | null;
    try {
      mode = (await Deno.stat(file)).mode;
    } catch (error) {
      throw new BmcCredentialError(key, `cannot read "${file}": ${reason(error)}`);
    }
    const unsafe = modeProblem(mode);
    if (unsafe) throw new BmcCredentialError(key, `"${file}" ${unsafe}`);
  }
  return text;
}

/**
 * Reads a machine's BMC credentials and CA.
 * @param bmc the machine's `[machines.bmc]` table
 * @returns the user name, password and CA text
 * @throws {BmcCredentialError} naming the key and the file that cannot be used
 */
export async function readBmcCredentials(
  bmc: NonNullable<Machine["bmc"]>,
): Promise<BmcCredentials> {
  const username = await readValue("username_file", bmc.username_file);
  const password = await readValue("password_file", bmc.password_file);
  if (bmc.ca_file === undefined) return { username, password };
  let caPem: string;
  try {
    caPem = await readInputFile(bmc.ca_file, PEM_FILE);
  } catch (error) {
    throw new BmcCredentialError("ca_file", `cannot read "${bmc.ca_file}": ${reason(error)}`);
  }
  const problem = caCertificatesProblem(caPem);
  if (problem) throw new BmcCredentialError("ca_file", `"${bmc.ca_file}" ${problem}`);
  return { username, password, caPem };
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Why a CA bundle cannot verify a BMC, or undefined when it can: every certificate in it must
 * parse, and the TLS library the poller uses must take the whole file (a bundle it refuses would
 * make every poll fail, reported as an unreachable BMC).
 * @param pem the `ca_file` text
 * @returns a predicate sentence naming the certificate at fault, or undefined
 */
export function caCertificatesProblem(pem: string): string | undefined {
  const blocks = [...pem.matchAll(CERTIFICATE_BLOCK)];
  if (blocks.length === 0) return "holds no PEM certificate (a line -----BEGIN CERTIFICATE-----)";
  for (const [index, block] of blocks.entries()) {
    try {
      new X509Certificate(block[0]);
    } catch (error) {
      const line = pem.slice(0, block.index).split("\n").length;
      return `holds a certificate that cannot be parsed (certificate ${index + 1}, line ${line}: ` +
        `${oneLine(errorMessage(error))})`;
    }
  }
  try {
    // the poller's own loader (redfish_client.ts), which needs no permission and opens nothing
    Deno.createHttpClient({ caCerts: [pem], http2: false }).close();
  } catch (error) {
    return `is not taken as a CA bundle by the TLS library: ${oneLine(errorMessage(error))}`;
  }
  return undefined;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

/**
 * Reads every machine's BMC files as the poller will.
 * @param config a validated config
 * @returns one issue per unusable file, at the key that names it
 */
export async function bmcFileIssues(config: Config): Promise<RawIssue[]> {
  const issues: RawIssue[] = [];
  for (const [i, machine] of config.machines.entries()) {
    if (machine.bmc === undefined) continue;
    try {
      await readBmcCredentials(machine.bmc);
    } catch (error) {
      if (!(error instanceof BmcCredentialError)) throw error;
      issues.push({ path: ["machines", i, "bmc", error.key], message: error.message });
    }
  }
  return issues;
}

function reason(error: unknown): string {
  return error instanceof InputFileError ? error.message : osReason(error);
}
