/**
 * The files an inventory names for the agent to read, read now as the agent reads them (a regular
 * file, the size cap of its kind, a deadline): `[server] metrics_token_file`, `tls_cert_file` and
 * `tls_key_file` (loaded as the server loads them, `tls_key_pair.ts`), `[kubernetes] kubeconfig`
 * with every file it names, and each `[machines.bmc]`'s credential and CA files (the CA parsed
 * and loaded as the poller loads it). `check`, `run` and each
 * reload ask this, so a file the agent could not use is an error of the inventory, with its line,
 * before the agent depends on it. `plan`, `render` and `status` work on other machines and do not.
 *
 * A kubeconfig or metrics token file that does not exist yet is no error: on a new cluster the
 * kubeconfig is written after the control-plane VIP is up (the agent retries its connection until
 * then), and a missing token keeps /metrics closed until it appears (fail closed, logged). Any other
 * problem is one.
 *
 * @module
 */
import type { RawIssue } from "./_schema_issues.ts";
import { bearerTokenProblem } from "./bearer_token.ts";
import { bmcFileIssues } from "./bmc_credentials.ts";
import {
  type FileKind,
  InputFileError,
  KUBECONFIG_FILE,
  osReason,
  readInputFile,
  TOKEN_FILE,
} from "../files/read_input_file.ts";
import { readTlsKeyPair, TlsKeyPairError } from "./tls_key_pair.ts";
import type { Config } from "./types.ts";
import { KubeconfigError, parseKubeconfig } from "../kube/kubeconfig.ts";

/**
 * Reads every file `config` names for the agent.
 * @param config a validated config
 * @param applied the same config with `run`'s command-line flags applied: a file a flag replaces
 *   is not the inventory's to answer for (the agent reads the flag's). @default config
 * @returns one issue per file that cannot be used, at the key that names it
 */
export async function namedFileIssues(
  config: Config,
  applied: Config = config,
): Promise<RawIssue[]> {
  const issues: RawIssue[] = [];
  const { server, kubernetes } = config;
  const token = server.metrics_token_file;
  if (token !== undefined && token === applied.server.metrics_token_file) {
    const problem = await fileProblem(token, TOKEN_FILE, bearerTokenProblem, { missingOk: true });
    if (problem) issues.push({ path: ["server", "metrics_token_file"], message: problem });
  }
  // the pair as the server loads it; a file a flag replaces is checked with the flags
  const { tls_cert_file: cert, tls_key_file: key } = server;
  if (
    cert !== undefined && key !== undefined && cert === applied.server.tls_cert_file &&
    key === applied.server.tls_key_file
  ) {
    try {
      await readTlsKeyPair(cert, key);
    } catch (error) {
      if (!(error instanceof TlsKeyPairError)) throw error;
      issues.push({ path: ["server", error.field], message: error.message });
    }
  }
  const kubeconfig = kubernetes.kubeconfig;
  if (kubeconfig !== undefined && kubeconfig === applied.kubernetes.kubeconfig) {
    const problem = await kubeconfigProblem(kubeconfig);
    if (problem) issues.push({ path: ["kubernetes", "kubeconfig"], message: problem });
  }
  issues.push(...await bmcFileIssues(config));
  return issues;
}

async function fileProblem(
  file: string,
  kind: FileKind,
  contentProblem: (text: string) => string | undefined,
  options: { missingOk?: boolean } = {},
): Promise<string | undefined> {
  let text: string;
  try {
    text = await readInputFile(file, kind);
  } catch (error) {
    if (options.missingOk && error instanceof InputFileError && error.problem === "not-found") {
      return undefined;
    }
    return `cannot read "${file}": ${readProblem(error)}`;
  }
  const problem = contentProblem(text);
  return problem ? `"${file}": ${problem}` : undefined;
}

async function kubeconfigProblem(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readInputFile(file, KUBECONFIG_FILE);
  } catch (error) {
    if (error instanceof InputFileError && error.problem === "not-found") return undefined;
    return `cannot read "${file}": ${readProblem(error)}`;
  }
  try {
    await parseKubeconfig(text, file);
  } catch (error) {
    if (error instanceof KubeconfigError) return error.message;
    return `cannot use "${file}": ${readProblem(error)}`;
  }
  return undefined;
}

function readProblem(error: unknown): string {
  return error instanceof InputFileError ? error.message : osReason(error);
}
