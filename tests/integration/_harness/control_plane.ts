/**
 * A real etcd + kube-apiserver on loopback for integration tests (envtest-style, no downloads).
 *
 * ```ts
 * integrationTest("the node controller initializes a node", async () => {
 *   await using cp = await startControlPlane();
 *   await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: "t1" } });
 * });
 * ```
 *
 * Authentication: static tokens (admin in system:masters, the `keelson` service account with no
 * extra groups, a plain `viewer`) and client certificates signed by the test CA. Authorization is
 * RBAC, so the keelson identity can do nothing until a test applies Keelson's RBAC manifests.
 *
 * @module
 */
import { ADMIN_CERT_USER, writePki } from "./pki.ts";
import { writeKubeconfig } from "./kubeconfig.ts";
import { freePorts, ManagedProcess } from "./process.ts";
import { requireAssets } from "./assets.ts";
import { pollUntil } from "../../_support/poll.ts";
import { errorMessage } from "../../../src/log/error_message.ts";

export { integrationAvailable, integrationTest } from "./assets.ts";

/** The user name the keelson token authenticates as (RBAC subjects match this string). */
export const KEELSON_SERVICE_ACCOUNT_USER = "system:serviceaccount:kube-system:keelson";

/** Options for `startControlPlane`. */
export interface ControlPlaneOptions {
  /** Extra kube-apiserver flags, e.g. `["--v=4"]`. @default [] */
  apiserverArgs?: string[];
  /** How long each process may take to become ready. @default 60_000 */
  startTimeoutMs?: number;
  /** Keep the directory (certs, logs, etcd data) after `stop()`. @default KEELSON_KEEP_CONTROL_PLANE=1 */
  keepDir?: boolean;
  /** More IP SANs of the serving certificate (reached through a forwarder). @default [] */
  extraServingIps?: string[];
}

/** A parsed answer from `request`. */
export interface KubeResponse<T> {
  /** HTTP status. */
  status: number;
  /** The JSON body (or the raw text when the body is not JSON). */
  body: T;
}

/** How long each phase of `startControlPlane` took, in milliseconds. */
export interface StartupTimings {
  pkiMs: number;
  etcdMs: number;
  apiserverMs: number;
  totalMs: number;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function hasDefaultRoute(): boolean {
  try {
    // /proc/net/route: the second column is the destination; 00000000 is the default route.
    return Deno.readTextFileSync("/proc/net/route").split("\n").slice(1)
      .some((line) => line.split(/\s+/)[1] === "00000000");
  } catch {
    return true;
  }
}

/** A running control plane. Stop it with `stop()` or `await using`. */
export class ControlPlane implements AsyncDisposable {
  /** The apiserver URL, `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** The CA certificate (PEM) that signed the serving and client certificates. */
  readonly caPem: string;
  /** The temporary directory holding certs, tokens, kubeconfigs, logs and etcd data. */
  readonly dir: string;
  /** Bearer token of `keelson-admin` (system:masters). */
  readonly adminToken: string;
  /** Bearer token of `system:serviceaccount:kube-system:keelson` (no extra groups). */
  readonly keelsonToken: string;
  /** Bearer token of user `viewer` (no groups, no RBAC). */
  readonly viewerToken: string;
  /** Kubeconfig: admin by bearer token. */
  readonly tokenKubeconfigPath: string;
  /** Kubeconfig: admin by `tokenFile:` (the file ends with a newline, as hand-made ones do). */
  readonly tokenFileKubeconfigPath: string;
  /** Kubeconfig: admin by embedded client certificate and key (like kubeadm's admin.conf). */
  readonly certKubeconfigPath: string;
  /** Kubeconfig: the keelson service-account token. */
  readonly keelsonKubeconfigPath: string;
  /** The etcd client URL. */
  readonly etcdUrl: string;
  /** How long startup took. */
  readonly timings: StartupTimings;
  readonly #etcd: ManagedProcess;
  readonly #apiserver: ManagedProcess;
  readonly #startTimeoutMs: number;
  readonly #keepDir: boolean;
  #client: Deno.HttpClient;
  #stopped = false;

  /** @internal use `startControlPlane` */
  constructor(fields: {
    server: string;
    caPem: string;
    dir: string;
    tokens: { admin: string; keelson: string; viewer: string };
    etcdUrl: string;
    etcd: ManagedProcess;
    apiserver: ManagedProcess;
    startTimeoutMs: number;
    keepDir: boolean;
    timings: StartupTimings;
  }) {
    this.server = fields.server;
    this.caPem = fields.caPem;
    this.dir = fields.dir;
    this.adminToken = fields.tokens.admin;
    this.keelsonToken = fields.tokens.keelson;
    this.viewerToken = fields.tokens.viewer;
    this.etcdUrl = fields.etcdUrl;
    this.tokenKubeconfigPath = `${fields.dir}/admin-token.kubeconfig`;
    this.tokenFileKubeconfigPath = `${fields.dir}/admin-token-file.kubeconfig`;
    this.certKubeconfigPath = `${fields.dir}/admin-cert.kubeconfig`;
    this.keelsonKubeconfigPath = `${fields.dir}/keelson.kubeconfig`;
    this.#etcd = fields.etcd;
    this.#apiserver = fields.apiserver;
    this.#startTimeoutMs = fields.startTimeoutMs;
    this.#keepDir = fields.keepDir;
    this.timings = fields.timings;
    this.#client = this.#newClient();
  }

  /** Path of the kube-apiserver log. */
  get apiserverLogPath(): string {
    return this.#apiserver.logPath;
  }

  /** Path of the etcd log. */
  get etcdLogPath(): string {
    return this.#etcd.logPath;
  }

  /** True while kube-apiserver runs. */
  get apiserverRunning(): boolean {
    return this.#apiserver.running;
  }

  #newClient(): Deno.HttpClient {
    return Deno.createHttpClient({ caCerts: [this.caPem], http2: false });
  }

  /**
   * Sends one request as the admin (bearer token), without any production code in the path.
   * @param method HTTP method
   * @param path API path, e.g. `/api/v1/nodes`
   * @param body an object (sent as JSON) or a string
   * @param contentType defaults to JSON, or JSON merge patch for PATCH
   * @param token another identity's bearer token
   * @returns the status and the parsed body
   */
  async request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    token: string = this.adminToken,
  ): Promise<KubeResponse<T>> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      accept: "application/json",
    };
    if (body !== undefined) {
      headers["content-type"] = contentType ??
        (method === "PATCH" ? "application/merge-patch+json" : "application/json");
    }
    const response = await fetch(new URL(path, this.server), {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      client: this.#client,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (e.g. /readyz): keep the text
    }
    return { status: response.status, body: parsed as T };
  }

  /**
   * Like `request`, but throws unless the status is 2xx.
   * @param method HTTP method
   * @param path API path
   * @param body an object (sent as JSON) or a string
   * @param contentType see `request`
   * @returns the parsed body
   * @throws {Error} naming the request, status and server message on a non-2xx answer
   */
  async requestOk<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<T> {
    const response = await this.request<T>(method, path, body, contentType);
    if (response.status < 200 || response.status > 299) {
      throw new Error(
        `${method} ${path} answered ${response.status}: ${JSON.stringify(response.body)}`,
      );
    }
    return response.body;
  }

  /**
   * Stops kube-apiserver (SIGTERM, then SIGKILL); etcd keeps running. For reconnect tests.
   */
  async stopApiserver(): Promise<void> {
    await this.#apiserver.stop();
  }

  /**
   * Starts kube-apiserver again on the same port and etcd, and waits until `/readyz` is 200.
   * @throws {Error} with the log tail when it does not become ready in time
   */
  async startApiserver(): Promise<void> {
    this.#client.close();
    this.#client = this.#newClient();
    this.#apiserver.start();
    await this.waitUntilReady(false);
  }

  /**
   * Waits until `/readyz` answers 200 and, with `objects`, until namespaces `default` and
   * `kube-node-lease` and Service `default/kubernetes` exist (they are created asynchronously
   * after the first start).
   * @param objects also wait for the default objects
   * @throws {Error} with the log tails when that does not happen within the start timeout
   */
  async waitUntilReady(objects = true): Promise<void> {
    const checks: Array<[string, () => Promise<boolean>]> = [
      ["/readyz to answer 200", async () => (await this.request("GET", "/readyz")).status === 200],
    ];
    if (objects) {
      checks.push(
        [
          "namespace default",
          async () => (await this.request("GET", "/api/v1/namespaces/default")).status === 200,
        ],
        [
          // deploy/rbac.yaml binds a Role there (the kubelets' node Leases)
          "namespace kube-node-lease",
          async () =>
            (await this.request("GET", "/api/v1/namespaces/kube-node-lease")).status === 200,
        ],
        [
          "Service default/kubernetes",
          async () =>
            (await this.request("GET", "/api/v1/namespaces/default/services/kubernetes"))
              .status === 200,
        ],
      );
    }
    for (const [what, check] of checks) {
      await waitUntilReady(what, this.#startTimeoutMs, check, [this.#apiserver, this.#etcd]);
    }
  }

  /**
   * Stops kube-apiserver, then etcd (SIGTERM by pid, SIGKILL after a grace period) and removes
   * the directory. Safe to call twice.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#apiserver.stop();
    await this.#etcd.stop();
    this.#client.close();
    if (!this.#keepDir) await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }

  /** `await using cp = await startControlPlane()` stops it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

async function waitUntilReady(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  processes: ManagedProcess[],
): Promise<void> {
  const tails = async () =>
    (await Promise.all(processes.map(async (p) => `--- ${p.logPath}\n${await p.logTail()}`)))
      .join("\n");
  let waited;
  try {
    // a process that exited ends the wait at once: nothing will come
    waited = await pollUntil(
      what,
      async () => processes.find((p) => !p.running) ?? (await check() && "ready"),
      { timeoutMs, intervalMs: 150, retryErrors: true, context: tails },
    );
  } catch (error) {
    throw new Error(`Cannot start the control plane: ${errorMessage(error)}`);
  }
  if (waited.value !== "ready") {
    const status = await waited.value.exited();
    throw new Error(
      `Cannot start the control plane: ${waited.value.logPath} exited with code ` +
        `${status.code} while waiting for ${what}; log tail:\n${await waited.value.logTail()}`,
    );
  }
}

/**
 * Starts etcd and kube-apiserver on free loopback ports in a fresh temporary directory and waits
 * until the apiserver is ready and has created namespace `default` and Service `default/kubernetes`.
 * @param options extra apiserver flags, timeout, keep the directory
 * @returns the running control plane
 * @throws {Error} when the binaries are missing or a process does not start (with its log tail)
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const began = performance.now();
  const assets = await requireAssets();
  const dir = await Deno.makeTempDir({ prefix: "keelson-cp-" });
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const keepDir = options.keepDir ?? Deno.env.get("KEELSON_KEEP_CONTROL_PLANE") === "1";
  const processes: ManagedProcess[] = [];
  let cp: ControlPlane | undefined;
  try {
    const pki = await writePki(dir, options.extraServingIps ?? []);
    const pkiMs = performance.now() - began;
    const tokens = { admin: randomToken(), keelson: randomToken(), viewer: randomToken() };
    await Deno.writeTextFile(
      `${dir}/tokens.csv`,
      `${tokens.admin},${ADMIN_CERT_USER},admin-uid,"system:masters"\n` +
        `${tokens.keelson},${KEELSON_SERVICE_ACCOUNT_USER},keelson-uid\n` +
        `${tokens.viewer},viewer,viewer-uid\n`,
      { mode: 0o600 },
    );
    const [etcdClientPort, etcdPeerPort, apiserverPort] = freePorts(3) as [number, number, number];
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcd = new ManagedProcess("etcd", assets.etcd, [
      "--name=keelson-test",
      `--data-dir=${dir}/etcd`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=keelson-test=${peerUrl}`,
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ], `${dir}/etcd.log`);
    processes.push(etcd);
    etcd.start();
    await waitUntilReady("etcd /health", startTimeoutMs, async () => {
      const response = await fetch(`${etcdUrl}/health`);
      const text = await response.text();
      return response.ok && text.includes('"health":"true"');
    }, [etcd]);
    const etcdMs = performance.now() - began - pkiMs;

    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      "--bind-address=127.0.0.1",
      `--secure-port=${apiserverPort}`,
      `--cert-dir=${dir}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      `--token-auth-file=${dir}/tokens.csv`,
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${pki.serviceAccountKey}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      "--service-cluster-ip-range=10.0.0.0/24",
      "--allow-privileged=true",
      "--disable-admission-plugins=ServiceAccount",
      "--profiling=false",
      "--v=1",
    ];
    // Without a default route kube-apiserver finds no address to advertise and refuses to start
    // (controller-runtime#669/#1749); loopback is then allowed only with no endpoint reconciler.
    if (!hasDefaultRoute() || Deno.env.get("KEELSON_APISERVER_LOOPBACK_ADVERTISE") === "1") {
      apiserverArgs.push("--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none");
    }
    apiserverArgs.push(...(options.apiserverArgs ?? []));
    const apiserver = new ManagedProcess(
      "kube-apiserver",
      assets.kubeApiserver,
      apiserverArgs,
      `${dir}/kube-apiserver.log`,
    );
    processes.push(apiserver);
    const server = `https://127.0.0.1:${apiserverPort}`;
    const timings: StartupTimings = { pkiMs, etcdMs, apiserverMs: 0, totalMs: 0 };
    cp = new ControlPlane({
      server,
      caPem: pki.caPem,
      dir,
      tokens,
      etcdUrl,
      etcd,
      apiserver,
      startTimeoutMs,
      keepDir,
      timings,
    });
    apiserver.start();
    await cp.waitUntilReady(true);
    timings.totalMs = performance.now() - began;
    timings.apiserverMs = timings.totalMs - pkiMs - etcdMs;

    await writeKubeconfig(cp.tokenKubeconfigPath, server, pki.caPem, "admin", {
      token: tokens.admin,
    });
    await Deno.writeTextFile(`${dir}/admin.token`, `${tokens.admin}\n`, { mode: 0o600 });
    await writeKubeconfig(cp.tokenFileKubeconfigPath, server, pki.caPem, "admin", {
      tokenFile: `${dir}/admin.token`,
    });
    await writeKubeconfig(cp.certKubeconfigPath, server, pki.caPem, "admin", {
      clientCertificatePem: await Deno.readTextFile(pki.adminCert),
      clientKeyPem: await Deno.readTextFile(pki.adminKey),
    });
    await writeKubeconfig(cp.keelsonKubeconfigPath, server, pki.caPem, "keelson", {
      token: tokens.keelson,
    });
    return cp;
  } catch (error) {
    if (cp) await cp.stop();
    for (const process of processes.reverse()) await process.stop();
    if (!keepDir) await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
}
