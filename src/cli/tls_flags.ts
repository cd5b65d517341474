/**
 * `--tls-cert-file` and `--tls-private-key-file`, which `run` takes in place of `[server]
 * tls_cert_file` and `tls_key_file`: the pair they make with the inventory's, checked as the
 * server loads it (`tls_key_pair.ts`). `check` takes the same two flags, so `check` given `run`'s
 * flags accepts exactly what `run` can serve with.
 *
 * @module
 */
import type { ConfigIssue } from "../config/config_error.ts";
import { readTlsKeyPair, TlsKeyPairError } from "../config/tls_key_pair.ts";
import type { Config } from "../config/types.ts";

/** The two flags, as given (undefined when absent). */
export interface TlsFlags {
  "tls-cert-file"?: string | undefined;
  "tls-private-key-file"?: string | undefined;
}

const FLAG_OF = {
  tls_cert_file: "--tls-cert-file",
  tls_key_file: "--tls-private-key-file",
} as const;

/** The two files of `[server]`. */
type ServerFiles = Pick<Config["server"], "tls_cert_file" | "tls_key_file">;

/**
 * The configuration with the flags' files in `[server]`.
 * @param config the inventory's configuration
 * @param flags the two flags
 * @returns a copy when a flag is given, else `config`
 */
export function withTlsFlags(config: Config, flags: TlsFlags): Config {
  if (flags["tls-cert-file"] === undefined && flags["tls-private-key-file"] === undefined) {
    return config;
  }
  return { ...config, server: { ...config.server, ...filesWithFlags(config.server, flags) } };
}

function filesWithFlags(server: ServerFiles, flags: TlsFlags): ServerFiles {
  return {
    ...server,
    ...(flags["tls-cert-file"] !== undefined ? { tls_cert_file: flags["tls-cert-file"] } : {}),
    ...(flags["tls-private-key-file"] !== undefined
      ? { tls_key_file: flags["tls-private-key-file"] }
      : {}),
  };
}

/**
 * Why the pair a flag takes part in cannot be served with; nothing when no flag is given (the
 * inventory's own pair is checked with the inventory).
 * @param server the inventory's `[server]` files, flags not applied (none when the inventory
 *   itself does not validate)
 * @param flags the two flags
 * @param source what to name as the file of an issue, e.g. `keelson.toml with the command-line
 *   flags`
 * @returns at most one issue, at the flag (or the key) naming the file at fault
 */
export async function tlsFlagIssues(
  server: ServerFiles,
  flags: TlsFlags,
  source: string,
): Promise<ConfigIssue[]> {
  const given = {
    "tls_cert_file": flags["tls-cert-file"] !== undefined,
    "tls_key_file": flags["tls-private-key-file"] !== undefined,
  };
  if (!given.tls_cert_file && !given.tls_key_file) return [];
  const { tls_cert_file: cert, tls_key_file: key } = filesWithFlags(server, flags);
  const where = (field: keyof typeof FLAG_OF) => given[field] ? FLAG_OF[field] : `server.${field}`;
  if (cert === undefined || key === undefined) {
    const missing = cert === undefined ? "tls_cert_file" : "tls_key_file";
    const present = missing === "tls_cert_file" ? "tls_key_file" : "tls_cert_file";
    return [{
      file: source,
      path: where(present),
      message: `is given without ${FLAG_OF[missing]} (or [server] ${missing}); give both`,
    }];
  }
  try {
    await readTlsKeyPair(cert, key);
    return [];
  } catch (error) {
    if (!(error instanceof TlsKeyPairError)) throw error;
    return [{ file: source, path: where(error.field), message: error.message }];
  }
}
