/**
 * A real Redfish server for tests: OpenStack's `sushy-emulator` (sushy-tools, from PyPI through
 * scripts/sushy.sh) with its fake driver, the given machines as its ComputerSystems, HTTPS with a
 * certificate of a CA the test makes (openssl), and basic authentication. Started and stopped as
 * kube-apiserver is (`ManagedProcess`, by pid).
 *
 * ```ts
 * sushyTest("a powered-off machine's Node is tainted", async () => {
 *   await using bmc = await startSushy({ systems: [{ uuid: SYSTEM_UUID, name: "w-1", power: "On" }] });
 *   await bmc.reset(SYSTEM_UUID, "ForceOff");
 *   const ms = await bmc.waitForPower(SYSTEM_UUID, "Off");
 * });
 * ```
 *
 * The fake driver applies a reset 1-11 s after it accepted it (a random delay, as real hardware
 * takes its time): `waitForPower` says when the emulator itself answers the new state. Its state
 * lives in `SUSHY_EMULATOR_STATE_DIR`, set to the emulator's own directory (the default,
 * /tmp/sushy-emulator, is shared by every emulator on the machine).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { pinnedHttpsRequest } from "../../../providers/baremetal/power/pinned_https.ts";
import { integrationTest } from "./assets.ts";
import { openssl, signedCert } from "./pki.ts";
import { freePorts, ManagedProcess } from "./process.ts";
import { waitFor } from "./wait.ts";

const SUSHY_SCRIPT = fileURLToPath(new URL("../../../scripts/sushy.sh", import.meta.url));

/** One ComputerSystem of the emulator. */
export interface SushySystem {
  /** Its Redfish id (the path is `/redfish/v1/Systems/<uuid>`), e.g. `crypto.randomUUID()`. */
  uuid: string;
  /** Its name (the emulator also answers `/redfish/v1/Systems/<name>` with a redirect). */
  name: string;
  /** Its power at start. */
  power: "On" | "Off";
}

/** Options of `startSushy`. */
export interface SushyOptions {
  /** The systems it serves (at least one). */
  systems: SushySystem[];
  /** Directory for the CA, certificate, auth, config, state and log. @default a new temp dir */
  dir?: string;
  /** The basic-auth user. @default "admin" */
  username?: string;
  /** The basic-auth password. @default a random one */
  password?: string;
  /** How long it may take to answer `/redfish/v1`. @default 60_000 */
  startTimeoutMs?: number;
  /**
   * Serve the CA's own self-signed certificate (basicConstraints CA:TRUE, no subjectAltName), as
   * BMCs that generate their own certificate do, instead of the one the CA signed.
   */
  serveCa?: boolean;
}

/** The outcome of looking for sushy-emulator: its path, or why it is unavailable. */
export type SushyBinary = { ok: true; path: string; python: string } | {
  ok: false;
  reason: string;
};

async function resolveSushy(): Promise<SushyBinary> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("bash", {
      args: [SUSHY_SCRIPT],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).output();
  } catch (error) {
    return { ok: false, reason: `cannot run "bash ${SUSHY_SCRIPT}": ${String(error)}` };
  }
  if (!output.success) {
    return { ok: false, reason: `"bash ${SUSHY_SCRIPT}" exited with code ${output.code}` };
  }
  const path = new TextDecoder().decode(output.stdout).trim().split("\n").at(-1) ?? "";
  const python = path.replace(/sushy-emulator$/, "python3");
  try {
    if ((await Deno.stat(path)).isFile && (await Deno.stat(python)).isFile) {
      return { ok: true, path, python };
    }
  } catch { /* below */ }
  return { ok: false, reason: `"bash ${SUSHY_SCRIPT}" printed "${path}", not sushy-emulator` };
}

let cached: Promise<SushyBinary> | undefined;

/**
 * Looks for sushy-emulator once per process (installing it into its cached venv if it must).
 * @returns its path and its venv's python, or the reason it is unavailable
 */
export function findSushy(): Promise<SushyBinary> {
  cached ??= resolveSushy();
  return cached;
}

// resolved when a test file importing this module loads, so `sushyTest` can decide synchronously
const availability = await findSushy();

/**
 * Registers an integration test that also needs sushy-emulator: skipped loudly without it, or
 * failed with the reason under `KEELSON_REQUIRE_INTEGRATION=1` (CI).
 * @param name the test name
 * @param fn the test body
 */
export function sushyTest(name: string, fn: (t: Deno.TestContext) => Promise<void>): void {
  integrationTest(name, fn, availability.ok ? undefined : availability.reason);
}

/** The operator's command of the README: "sha256 Fingerprint=AB:CD:..." without its prefix. */
async function sha256Fingerprint(dir: string, file: string): Promise<string> {
  const printed = await openssl(dir, ["x509", "-noout", "-fingerprint", "-sha256", "-in", file]);
  return printed.trim().replace(/^sha256 Fingerprint=/i, "");
}

/** A CA and a serving certificate it signed, as a BMC's. */
export interface BmcCertificates {
  /** The CA certificate (PEM file): what an inventory's `ca_file` names. */
  caFile: string;
  /** The CA certificate's PEM text. */
  caPem: string;
  /** The serving certificate and key (SANs IP:127.0.0.1, DNS:localhost). */
  certFile: string;
  keyFile: string;
  /** The serving certificate's SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` prints it. */
  certSha256: string;
  /** The CA certificate's, the same way. */
  caSha256: string;
}

/**
 * Makes a CA and a serving certificate for 127.0.0.1/localhost in `dir` (`ca.crt`, `bmc.crt`,
 * `bmc.key`; all 0644, so Keelson's unprivileged user can read the CA). A second call in another
 * directory makes an unrelated CA: a certificate that does not match.
 * @param dir an existing directory
 * @returns the files
 * @throws {Error} when openssl fails
 */
export async function makeBmcCertificates(dir: string): Promise<BmcCertificates> {
  await openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=keelson-test-bmc-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
  ]);
  await signedCert(
    dir,
    "bmc",
    "/CN=bmc.test",
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n" +
      "keyUsage=critical,digitalSignature,keyEncipherment\n",
  );
  for (const file of ["ca.crt", "bmc.crt", "bmc.key"]) await Deno.chmod(`${dir}/${file}`, 0o644);
  return {
    caFile: `${dir}/ca.crt`,
    caPem: await Deno.readTextFile(`${dir}/ca.crt`),
    certFile: `${dir}/bmc.crt`,
    keyFile: `${dir}/bmc.key`,
    certSha256: await sha256Fingerprint(dir, "bmc.crt"),
    caSha256: await sha256Fingerprint(dir, "ca.crt"),
  };
}

/** A running sushy-emulator. Stop it with `stop()` or `await using`. */
export class Sushy implements AsyncDisposable {
  /** The child process (pid, log). */
  readonly process: ManagedProcess;
  /** Its base URL, `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** The directory holding its files. */
  readonly dir: string;
  /** Its CA and serving certificate. */
  readonly certificates: BmcCertificates;
  /** A file holding the user name (0600; `readableByTestUser` hands it to Keelson's user). */
  readonly usernameFile: string;
  /** A file holding the password and a newline (0600): an inventory's `password_file`. */
  readonly passwordFile: string;
  /** The credentials, for the test's own requests. */
  readonly username: string;
  readonly password: string;
  /** Whether it serves the CA's own certificate (`SushyOptions.serveCa`). */
  readonly servesCa: boolean;
  readonly #client: Deno.HttpClient;
  readonly #ownsDir: boolean;

  /** @internal use `startSushy` */
  constructor(fields: {
    process: ManagedProcess;
    url: string;
    dir: string;
    ownsDir: boolean;
    certificates: BmcCertificates;
    usernameFile: string;
    passwordFile: string;
    username: string;
    password: string;
    servesCa: boolean;
  }) {
    this.process = fields.process;
    this.url = fields.url;
    this.dir = fields.dir;
    this.#ownsDir = fields.ownsDir;
    this.certificates = fields.certificates;
    this.usernameFile = fields.usernameFile;
    this.passwordFile = fields.passwordFile;
    this.username = fields.username;
    this.password = fields.password;
    this.servesCa = fields.servesCa;
    this.#client = Deno.createHttpClient({ caCerts: [fields.certificates.caPem] });
  }

  /**
   * A system's path, as an inventory's `system` names it.
   * @param uuid the system's id
   * @returns `/redfish/v1/Systems/<uuid>`
   */
  systemPath(uuid: string): string {
    return `/redfish/v1/Systems/${uuid}`;
  }

  /**
   * Sends one request as the configured user (or none), trusting the emulator's CA (or, when it
   * serves the CA's own certificate, which Deno's verifier refuses as a server's, that certificate
   * by fingerprint).
   * @param method the HTTP method
   * @param path below the base URL
   * @param body a JSON body
   * @returns the status and the parsed JSON body (undefined when none)
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = {
      authorization: `Basic ${btoa(`${this.username}:${this.password}`)}`,
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.servesCa) {
      const answer = await pinnedHttpsRequest({
        url: new URL(`${this.url}${path}`),
        method: method as "GET" | "POST",
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        certificateSha256: this.certificates.caSha256,
        maxBodyBytes: 1024 * 1024,
        signal: AbortSignal.timeout(10_000),
      });
      const text = new TextDecoder().decode(answer.body);
      return { status: answer.status, body: text === "" ? undefined : JSON.parse(text) };
    }
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      client: this.#client,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
  }

  /**
   * The system's `PowerState` as the emulator answers it now.
   * @param uuid the system's id
   * @returns e.g. "On"
   * @throws {Error} when the emulator does not answer 200
   */
  async powerState(uuid: string): Promise<string> {
    const { status, body } = await this.request("GET", this.systemPath(uuid));
    if (status !== 200) throw new Error(`GET ${this.systemPath(uuid)}: ${status}`);
    return String((body as { PowerState?: unknown }).PowerState);
  }

  /**
   * Resets the system through Redfish (`ComputerSystem.Reset`); the emulator applies it 1-11 s
   * later.
   * @param uuid the system's id
   * @param resetType e.g. "ForceOff", "On"
   * @throws {Error} when the emulator refuses it
   */
  async reset(uuid: string, resetType: "ForceOff" | "On" | "GracefulShutdown"): Promise<void> {
    const path = `${this.systemPath(uuid)}/Actions/ComputerSystem.Reset`;
    const { status, body } = await this.request("POST", path, { ResetType: resetType });
    if (status !== 204 && status !== 200) {
      throw new Error(`POST ${path} ${resetType}: ${status} ${JSON.stringify(body)}`);
    }
  }

  /**
   * Waits until the emulator answers `state` for the system.
   * @param uuid the system's id
   * @param state the awaited PowerState
   * @param timeoutMs the bound (the fake driver takes up to 11 s)
   * @returns `performance.now()` when it first answered it
   */
  async waitForPower(uuid: string, state: "On" | "Off", timeoutMs = 30_000): Promise<number> {
    return await waitFor(
      async () => (await this.powerState(uuid)) === state ? performance.now() : undefined,
      { timeoutMs, intervalMs: 100, message: `system ${uuid} PowerState "${state}"` },
    );
  }

  /**
   * The emulator's log so far ("" while unreadable); it logs every request it served.
   * @returns the log text
   */
  log(): Promise<string> {
    return Deno.readTextFile(this.process.logPath).catch(() => "");
  }

  /** Stops it by pid (SIGTERM, then SIGKILL) and removes its directory if it made it. */
  async stop(): Promise<void> {
    await this.process.stop(5_000);
    this.#client.close();
    if (this.#ownsDir) await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** Python literal of a string (JSON strings are valid Python literals for this alphabet). */
function py(value: string): string {
  return JSON.stringify(value);
}

/**
 * Starts `sushy-emulator --fake` on a free loopback port with HTTPS (a new CA), basic auth and
 * `options.systems`, and waits until `/redfish/v1` answers.
 * @param options systems, directory, credentials, timeout
 * @returns the running emulator
 * @throws {Error} when sushy-emulator is unavailable or does not come up (with its log tail)
 */
export async function startSushy(options: SushyOptions): Promise<Sushy> {
  const binary = await findSushy();
  if (!binary.ok) throw new Error(`Cannot start sushy-emulator: ${binary.reason}`);
  const ownsDir = options.dir === undefined;
  const dir = options.dir ?? await Deno.makeTempDir({ prefix: "keelson-sushy-" });
  // the CA and credential files must be readable by Keelson's unprivileged test user
  await Deno.chmod(dir, 0o755);
  const certificates = await makeBmcCertificates(dir);
  const username = options.username ?? "admin";
  const password = options.password ?? crypto.randomUUID();
  const hashed = await new Deno.Command(binary.python, {
    args: [
      "-c",
      "import bcrypt, sys; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(4)).decode())",
      password,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!hashed.success) {
    throw new Error(`Cannot hash the password: ${new TextDecoder().decode(hashed.stderr)}`);
  }
  const authFile = `${dir}/htpasswd`;
  await Deno.writeTextFile(
    authFile,
    `${username}:${new TextDecoder().decode(hashed.stdout).trim()}\n`,
  );
  const usernameFile = `${dir}/bmc-username`;
  const passwordFile = `${dir}/bmc-password`;
  await Deno.writeTextFile(usernameFile, username);
  await Deno.writeTextFile(passwordFile, `${password}\n`);
  // a world-readable password file is refused by `keelson check`; a test hands both to Keelson's
  // user with `readableByTestUser` (0640, its group)
  await Deno.chmod(usernameFile, 0o600);
  await Deno.chmod(passwordFile, 0o600);
  const systems = options.systems.map((s) =>
    `{"uuid": ${py(s.uuid)}, "name": ${py(s.name)}, "power_state": ${
      py(s.power)
    }, "nics": [], "external_notifier": False}`
  );
  const configFile = `${dir}/sushy.conf`;
  await Deno.writeTextFile(
    configFile,
    [
      `SUSHY_EMULATOR_FAKE_DRIVER = True`,
      `SUSHY_EMULATOR_FAKE_SYSTEMS = [${systems.join(", ")}]`,
      `SUSHY_EMULATOR_AUTH_FILE = ${py(authFile)}`,
      `SUSHY_EMULATOR_STATE_DIR = ${py(`${dir}/state`)}`,
      "",
    ].join("\n"),
  );
  const [port] = freePorts(1) as [number];
  const process = new ManagedProcess("sushy-emulator", binary.path, [
    "--config",
    configFile,
    "--fake",
    "--interface",
    "127.0.0.1",
    "--port",
    String(port),
    "--ssl-certificate",
    options.serveCa ? certificates.caFile : certificates.certFile,
    "--ssl-key",
    options.serveCa ? `${dir}/ca.key` : certificates.keyFile,
  ], `${dir}/sushy-emulator.log`);
  process.start();
  const sushy = new Sushy({
    process,
    url: `https://127.0.0.1:${port}`,
    dir,
    ownsDir,
    certificates,
    usernameFile,
    passwordFile,
    username,
    password,
    servesCa: options.serveCa ?? false,
  });
  try {
    const outcome = await waitFor(async () => {
      if (!process.running) return "exited";
      const { status } = await sushy.request("GET", "/redfish/v1/Systems");
      return status === 200 ? "up" : undefined;
    }, { timeoutMs: options.startTimeoutMs ?? 60_000, message: "sushy-emulator /redfish/v1" });
    if (outcome === "exited") {
      throw new Error(`it exited with code ${(await process.exited()).code}`);
    }
    return sushy;
  } catch (error) {
    const tail = await process.logTail();
    await sushy.stop();
    throw new Error(`Cannot start sushy-emulator: ${String(error)}\nlog tail:\n${tail}`);
  }
}
