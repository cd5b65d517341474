/**
 * Where and how to reach the API server. Resolution order, like upstream CCMs: an explicit
 * kubeconfig path (flag or TOML), then `$KUBECONFIG`, then in-cluster (`KUBERNETES_SERVICE_HOST`
 * /`_PORT` and the mounted ServiceAccount). `keelson status`, a tool run by people, resolves as
 * kubectl does (`kubectlDefaults`): `~/.kube/config` comes between `$KUBECONFIG` and in-cluster.
 * `$KUBECONFIG` is a colon-separated list merged as kubectl merges it: files that do not exist
 * are skipped, the first file to set `current-context` or to define a context, cluster or user
 * of a name wins, and relative paths resolve against the file that holds the entry.
 *
 * Only forms the transport can honour are accepted; everything else fails with a
 * `KubeconfigError` naming the file, context and field. Secrets never appear in messages. Every
 * file (the kubeconfig, the files it names, the ServiceAccount's) is read as a regular file of
 * bounded size within a deadline (`readInputFile`); a `tokenFile` is read once here too, so a
 * token file that cannot work fails now, naming the field, rather than at the first request.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { parse as parseYaml } from "yaml";
import {
  type FileKind,
  InputFileError,
  KUBECONFIG_FILE,
  PEM_FILE,
  readInputFile,
  TOKEN_FILE,
} from "../files/read_input_file.ts";
import { errorMessage } from "../log/error_message.ts";

/** Everything the transport needs to reach and authenticate to the API server. */
export interface ConnectionSettings {
  /** Base URL, e.g. `https://10.0.0.10:6443` (no trailing slash). */
  server: string;
  /** CA bundle (PEM) trusted for the server, in addition to the system roots. */
  caPem?: string;
  /** Client certificate chain (PEM) for mTLS. */
  clientCertPem?: string;
  /** Client private key (PEM) for mTLS. */
  clientKeyPem?: string;
  /** A static bearer token. */
  token?: string;
  /** A file holding the bearer token; re-read periodically (projected tokens rotate). */
  tokenFile?: string;
  /** HTTP basic auth user name (with `password`). */
  username?: string;
  /** HTTP basic auth password. */
  password?: string;
  /**
   * The name to verify the server certificate against. Deno cannot override it per client, so
   * the parser refuses kubeconfigs whose tls-server-name differs from the server's host and the
   * transport refuses settings that set it.
   */
  tlsServerName?: string;
  /** Always false: Deno cannot skip verification per client, so kubeconfigs asking for it are refused. */
  insecureSkipTlsVerify?: boolean;
  /** The namespace of the context, or of the in-cluster ServiceAccount. */
  namespace?: string;
  /** Where these settings came from, for logs: `kubeconfig "<path>" context "<name>"` or `in-cluster`. */
  source: string;
}

/** A problem with the kubeconfig or the in-cluster environment that the user can fix. */
export class KubeconfigError extends Error {
  /**
   * @param message what is wrong and what to do
   * @param options the cause
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "KubeconfigError";
  }
}

/** Where the ServiceAccount is mounted in a pod. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Reads one file: a regular file of at most `kind.maxBytes`, within a deadline. */
export type ReadKubeFile = (path: string, kind: FileKind) => Promise<string>;

const readBounded: ReadKubeFile = (path, kind) => readInputFile(path, kind);

/** Options for `resolveConnectionSettings`. */
export interface ResolveOptions {
  /** Explicit kubeconfig path (flag or TOML); wins over everything else. */
  kubeconfig?: string;
  /** Context to use instead of `current-context`. */
  context?: string;
  /** Environment lookup. @default Deno.env.get */
  getEnv?: (name: string) => string | undefined;
  /** File reader. @default readInputFile (bounded) */
  readTextFile?: ReadKubeFile;
  /** ServiceAccount mount. @default SERVICE_ACCOUNT_DIR */
  serviceAccountDir?: string;
  /** Also try `$HOME/.kube/config` before in-cluster, as kubectl does. @default false */
  kubectlDefaults?: boolean;
}

/**
 * Resolves the connection settings: explicit path, `$KUBECONFIG` (merged), `~/.kube/config`
 * (with `kubectlDefaults`), in-cluster.
 * @param options explicit path, context and injectable environment/file access
 * @returns the settings
 * @throws {KubeconfigError} when nothing is configured or the configuration is unusable
 */
export async function resolveConnectionSettings(
  options: ResolveOptions = {},
): Promise<ConnectionSettings> {
  const getEnv = options.getEnv ?? ((name: string) => Deno.env.get(name));
  const read = options.readTextFile ?? readBounded;
  const parseOptions = { context: options.context, readTextFile: read };
  if (options.kubeconfig) {
    const text = await readFile(
      read,
      options.kubeconfig,
      KUBECONFIG_FILE,
      "Cannot read kubeconfig",
    );
    return await parseKubeconfig(text, options.kubeconfig, parseOptions);
  }
  const list = [...new Set((getEnv("KUBECONFIG") ?? "").split(":").filter((p) => p !== ""))];
  if (list.length > 0) {
    const files: KubeconfigFile[] = [];
    for (const path of list) {
      const text = await readFile(read, path, KUBECONFIG_FILE, "Cannot read kubeconfig", true);
      if (text !== undefined) files.push({ path, doc: parseDocument(text, path) });
    }
    if (files.length === 0) {
      throw new KubeconfigError(
        `Cannot use $KUBECONFIG: none of its files exists (${
          list.map((p) => `"${p}"`).join(", ")
        })`,
      );
    }
    return await settingsFromFiles(files, parseOptions);
  }
  const home = getEnv("HOME");
  if (options.kubectlDefaults && home) {
    const path = join(home, ".kube", "config");
    const text = await readFile(read, path, KUBECONFIG_FILE, "Cannot read kubeconfig", true);
    if (text !== undefined) return await parseKubeconfig(text, path, parseOptions);
  }
  const host = getEnv("KUBERNETES_SERVICE_HOST");
  const port = getEnv("KUBERNETES_SERVICE_PORT");
  if (host && port) {
    return await inClusterSettings(
      host,
      port,
      options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR,
      read,
    );
  }
  throw new KubeconfigError(
    "Cannot find a Kubernetes connection: no kubeconfig was given (--kubeconfig or " +
      "[kubernetes] kubeconfig), $KUBECONFIG is empty" +
      (options.kubectlDefaults ? ", ~/.kube/config does not exist" : "") +
      " and KUBERNETES_SERVICE_HOST/PORT are not set (not in a pod)",
  );
}

/** One kubeconfig file, parsed. */
interface KubeconfigFile {
  path: string;
  doc: Record<string, unknown>;
}

function parseDocument(text: string, path: string): Record<string, unknown> {
  const where = `kubeconfig "${path}"`;
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    const detail = errorMessage(error).split("\n")[0];
    throw new KubeconfigError(`Cannot parse ${where}: ${detail}`, { cause: error });
  }
  // an empty file is an empty kubeconfig, as kubectl reads it
  if (doc === null || doc === undefined) return {};
  if (!isRecord(doc)) throw new KubeconfigError(`Cannot use ${where}: it is not a YAML mapping`);
  return doc;
}

/**
 * Parses kubeconfig YAML and picks one context.
 * @param text the YAML
 * @param path the file it came from (names it in errors; relative file fields resolve against it)
 * @param options the context to use and a file reader for referenced files
 * @returns the settings
 * @throws {KubeconfigError} on bad YAML, a missing context/cluster/user or an unsupported form
 */
export async function parseKubeconfig(
  text: string,
  path: string,
  options: { context?: string | undefined; readTextFile?: ReadKubeFile } = {},
): Promise<ConnectionSettings> {
  return await settingsFromFiles([{ path, doc: parseDocument(text, path) }], options);
}

/** The settings of one context of kubeconfig files merged as kubectl merges them. */
async function settingsFromFiles(
  files: readonly KubeconfigFile[],
  options: { context?: string | undefined; readTextFile?: ReadKubeFile },
): Promise<ConnectionSettings> {
  const read = options.readTextFile ?? readBounded;
  const where = files.length === 1
    ? `kubeconfig "${files[0]!.path}"`
    : `kubeconfig files ${files.map((f) => `"${f.path}"`).join(", ")} ($KUBECONFIG)`;
  const contextName = options.context ??
    files.map((f) => str(f.doc["current-context"])).find((c) => c !== undefined);
  if (!contextName) {
    throw new KubeconfigError(
      `Cannot use ${where}: current-context is not set; set it or pass a context name`,
    );
  }
  const context = named(files, "contexts", "context", contextName, where);
  const at = `kubeconfig "${context.path}" context "${contextName}"`;
  const clusterName = str(context.value["cluster"]);
  if (!clusterName) throw new KubeconfigError(`Cannot use ${at}: context.cluster is not set`);
  const { value: cluster, path: clusterPath } = named(
    files,
    "clusters",
    "cluster",
    clusterName,
    where,
  );
  const userName = str(context.value["user"]);
  const user = userName
    ? named(files, "users", "user", userName, where)
    : { value: {}, path: context.path };
  const settings: ConnectionSettings = {
    server: serverUrl(cluster["server"], `${at} cluster "${clusterName}"`),
    source: at,
  };
  const namespace = str(context.value["namespace"]);
  if (namespace) settings.namespace = namespace;
  const tlsServerName = str(cluster["tls-server-name"]);
  if (tlsServerName && tlsServerName !== new URL(settings.server).hostname) {
    // Deno's fetch verifies the certificate against the URL's host only; there is no per-client
    // server-name override (a "tcp" proxy transport would silently drop TLS altogether)
    throw new KubeconfigError(
      `Cannot use ${at}: cluster "${clusterName}" sets tls-server-name "${tlsServerName}", which ` +
        "Deno cannot honour; use a server URL whose host name is in the API server certificate",
    );
  }
  if (cluster["insecure-skip-tls-verify"] === true) {
    throw new KubeconfigError(
      `Cannot use ${at}: cluster "${clusterName}" sets insecure-skip-tls-verify, which Deno ` +
        "cannot do per connection; set certificate-authority-data to the cluster's CA instead",
    );
  }
  if (cluster["proxy-url"] !== undefined) {
    throw new KubeconfigError(
      `Cannot use ${at}: cluster "${clusterName}" sets proxy-url, which Keelson does not support; ` +
        "reach the API server directly",
    );
  }
  const ca = await pem(cluster, "certificate-authority", dirname(clusterPath), at, read);
  if (ca) settings.caPem = ca;
  const userAt = `${at} user "${userName ?? ""}"`;
  for (
    const [field, what] of [["exec", "an exec credential plugin"], [
      "auth-provider",
      "an auth-provider plugin",
    ]] as const
  ) {
    if (user.value[field] !== undefined) {
      throw new KubeconfigError(
        `Cannot use ${userAt}: it uses ${what} (${field}), which Keelson does not run; use a ` +
          "client certificate (client-certificate-data/client-key-data), token or tokenFile",
      );
    }
  }
  const cert = await pem(user.value, "client-certificate", dirname(user.path), userAt, read);
  const key = await pem(user.value, "client-key", dirname(user.path), userAt, read);
  if ((cert === undefined) !== (key === undefined)) {
    throw new KubeconfigError(
      `Cannot use ${userAt}: client-certificate and client-key must be given together`,
    );
  }
  if (cert && key) {
    settings.clientCertPem = cert;
    settings.clientKeyPem = key;
  }
  const token = str(user.value["token"]);
  if (token) settings.token = token;
  const tokenFile = str(user.value["tokenFile"]);
  if (tokenFile) {
    settings.tokenFile = isAbsolute(tokenFile) ? tokenFile : join(dirname(user.path), tokenFile);
    await readFile(
      read,
      settings.tokenFile,
      TOKEN_FILE,
      `Cannot use ${userAt}: cannot read tokenFile`,
    );
  }
  const username = str(user.value["username"]);
  if (username) {
    settings.username = username;
    settings.password = str(user.value["password"]) ?? "";
  }
  return settings;
}

async function inClusterSettings(
  host: string,
  port: string,
  dir: string,
  read: ReadKubeFile,
): Promise<ConnectionSettings> {
  const hostPart = host.includes(":") ? `[${host}]` : host;
  const tokenFile = join(dir, "token");
  await readFile(
    read,
    tokenFile,
    TOKEN_FILE,
    "Cannot use the in-cluster ServiceAccount: cannot read token",
  );
  const caPem = await readFile(
    read,
    join(dir, "ca.crt"),
    PEM_FILE,
    "Cannot use the in-cluster ServiceAccount: cannot read ca.crt",
  );
  const settings: ConnectionSettings = {
    server: `https://${hostPart}:${port}`,
    caPem,
    tokenFile,
    source: "in-cluster",
  };
  try {
    const namespace = (await read(join(dir, "namespace"), TOKEN_FILE)).trim();
    if (namespace) settings.namespace = namespace;
  } catch {
    // the namespace file is optional; leader election has its own configured namespace
  }
  return settings;
}

async function readFile(
  read: ReadKubeFile,
  path: string,
  kind: FileKind,
  prefix: string,
): Promise<string>;
async function readFile(
  read: ReadKubeFile,
  path: string,
  kind: FileKind,
  prefix: string,
  missingOk: true,
): Promise<string | undefined>;
/** Reads a file; every error names the file once, after `prefix`. */
async function readFile(
  read: ReadKubeFile,
  path: string,
  kind: FileKind,
  prefix: string,
  missingOk = false,
): Promise<string | undefined> {
  try {
    return await read(path, kind);
  } catch (error) {
    const notFound = error instanceof Deno.errors.NotFound ||
      (error instanceof InputFileError && error.problem === "not-found");
    if (notFound && missingOk) return undefined;
    const cause = error instanceof InputFileError ? error.cause : error;
    // Deno's own text repeats the path ("requires read access to \"<path>\", ...")
    const detail = notFound
      ? "the file does not exist"
      : cause instanceof Deno.errors.NotCapable
      ? "this process's Deno permissions do not allow reading it"
      : error instanceof InputFileError
      ? error.message
      : error instanceof Deno.errors.PermissionDenied
      ? "permission denied"
      : errorMessage(error);
    throw new KubeconfigError(`${prefix} "${path}": ${detail}`, { cause: error });
  }
}

/**
 * Finds `{ name, <inner>: {...} }` in the lists `doc[listKey]` of the files, the first file
 * defining the name winning (kubectl's merge).
 */
function named(
  files: readonly KubeconfigFile[],
  listKey: string,
  inner: string,
  name: string,
  where: string,
): { value: Record<string, unknown>; path: string } {
  const names: string[] = [];
  for (const { path, doc } of files) {
    const list = Array.isArray(doc[listKey]) ? doc[listKey] as unknown[] : [];
    for (const entry of list) {
      if (!isRecord(entry)) continue;
      const entryName = str(entry["name"]);
      if (entryName !== undefined) names.push(entryName);
      if (entryName === name) {
        const value = entry[inner];
        if (!isRecord(value)) {
          throw new KubeconfigError(
            `Cannot use kubeconfig "${path}": ${listKey} entry "${name}" has no "${inner}" mapping`,
          );
        }
        return { value, path };
      }
    }
  }
  const known = names.length ? [...new Set(names)].map((n) => `"${n}"`).join(", ") : "none";
  throw new KubeconfigError(
    `Cannot use ${where}: ${inner} "${name}" is not in ${listKey} (known: ${known})`,
  );
}

/** Reads `<field>-data` (base64 PEM) or `<field>` (a file path). */
async function pem(
  section: Record<string, unknown>,
  field: string,
  base: string,
  at: string,
  read: ReadKubeFile,
): Promise<string | undefined> {
  const data = str(section[`${field}-data`]);
  if (data) {
    let text: string;
    try {
      const bytes = Uint8Array.from(atob(data.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
      text = new TextDecoder().decode(bytes);
    } catch (error) {
      throw new KubeconfigError(`Cannot use ${at}: ${field}-data is not valid base64`, {
        cause: error,
      });
    }
    if (!text.includes("-----BEGIN ")) {
      throw new KubeconfigError(`Cannot use ${at}: ${field}-data does not decode to PEM`);
    }
    return text;
  }
  const file = str(section[field]);
  if (!file) return undefined;
  const full = isAbsolute(file) ? file : join(base, file);
  return await readFile(read, full, PEM_FILE, `Cannot use ${at}: cannot read ${field}`);
}

function serverUrl(value: unknown, at: string): string {
  const server = str(value);
  if (!server) throw new KubeconfigError(`Cannot use ${at}: cluster.server is not set`);
  let url: URL;
  try {
    url = new URL(server);
  } catch (error) {
    throw new KubeconfigError(`Cannot use ${at}: cluster.server "${server}" is not a URL`, {
      cause: error,
    });
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new KubeconfigError(
      `Cannot use ${at}: cluster.server "${server}" must start with https:// or http://`,
    );
  }
  return server.replace(/\/+$/, "");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}
