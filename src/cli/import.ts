/**
 * `keelson import metallb|kube-vip`: writes a Keelson inventory from another load balancer's
 * configuration as kubectl exports it, then runs `keelson check`'s validation on what it wrote,
 * with the written text's line numbers. With `--kubeconfig`, the machines come from the cluster's
 * Nodes (one list request; nothing is written to the cluster).
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { formatIssue } from "../config/config_error.ts";
import { readInputFile } from "../files/read_input_file.ts";
import { inventoryIssues } from "../import/check_output.ts";
import { importKubeVip, type KubeVipAnnounce } from "../import/kube_vip.ts";
import { importMetallb } from "../import/metallb.ts";
import { IMPORT_FILE, ImportError } from "../import/source_objects.ts";
import { createReadOnlyKubeClient } from "../kube/read_only_client.ts";
import { KubeconfigError, resolveConnectionSettings } from "../kube/kubeconfig.ts";
import { errorMessage } from "../log/error_message.ts";
import { ignoredItemsNote } from "../kube/list_items.ts";
import { listAllPages } from "../plan/live_cluster.ts";
import { SnapshotNodeSchema } from "../snapshot/snapshot_schema.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import { print, printError } from "./output.ts";
import { parseFlags, UsageError } from "./usage_error.ts";

/** The help text of `keelson import`. */
export const IMPORT_USAGE =
  `Usage: keelson import metallb  --from FILE [--kubeconfig FILE [--context NAME]] > keelson.toml
       keelson import kube-vip --from FILE [--announce vrrp|bgp]
                               [--kubeconfig FILE [--context NAME]] > keelson.toml

Writes a Keelson inventory (TOML) from another load balancer's configuration, then validates it
as keelson check does. Every setting with no Keelson equivalent is a comment beside the key it
would be, saying what it was and what to do instead. Pools keep exactly the addresses the old
controller handed out.

  metallb    FILE is MetalLB's configuration; export it as its version keeps it:
               0.14 and later: kubectl get ipaddresspools,l2advertisements,\\
                 bgpadvertisements,bgppeers,communities,bfdprofiles -A -o yaml > metallb.yaml
               0.13: the same list with addresspools added
               0.12 and earlier: kubectl get configmap config -n metallb-system -o yaml \\
                 > metallb.yaml  (or the text of its config key alone)
  kube-vip   FILE is kube-vip-cloud-provider's ConfigMap:
               kubectl get configmap kubevip -n kube-system -o yaml > kubevip.yaml

Flags:
      --from FILE         the exported resources (YAML or JSON)
      --kubeconfig FILE   list the cluster's Nodes (read only) for [[machines]]; without it the
                          machines are a commented example to fill in
      --context NAME      the kubeconfig context (default: its current-context)
      --announce MODE     kube-vip only: vrrp (kube-vip's ARP mode, the default) or bgp
  -h, --help              print this help

The inventory goes to stdout (redirect it: the binary may write only below its own
directories); problems go to stderr.

Exit codes: 0 written and valid, 1 unreadable input, or written but not valid yet (every
problem on stderr with its line, e.g. machines still to fill in), or written with a restriction
of the old controller's that Keelson cannot express (a namespace or node selector: the pool is
kept narrower, never wider, and stderr says what to do), 2 wrong command line.`;

/** The flag table of `keelson import` (node:util parseArgs). */
export const IMPORT_FLAGS = {
  from: { type: "string" },
  kubeconfig: { type: "string" },
  context: { type: "string" },
  announce: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const NODE_LIST_TIMEOUT_MS = 30_000;

/**
 * Runs `keelson import`.
 * @param args the arguments after `import`
 * @returns the exit code
 * @throws {UsageError} on a wrong command line (exit 2)
 * @example
 * ```ts
 * const code = await importCommand(["metallb", "--from", "metallb.yaml"]);
 * ```
 */
export async function importCommand(args: string[]): Promise<number> {
  // the binary may write only below its own directories: the inventory goes to stdout
  const output = args.find((arg) => /^(?:-o|--output|--out)(?:=|$)/.test(arg));
  if (output !== undefined) {
    throw new UsageError(
      `${output.replace(/=.*$/s, "")} is not taken: the inventory goes to stdout; redirect it ` +
        "(keelson import ... > keelson.toml)",
    );
  }
  const { values, positionals } = parseFlags(args, IMPORT_FLAGS);
  if (values.help) {
    print(IMPORT_USAGE);
    return EXIT_OK;
  }
  const [source, ...extra] = positionals;
  if (source !== "metallb" && source !== "kube-vip") {
    throw new UsageError(
      source === undefined
        ? "name what to import from: keelson import metallb|kube-vip --from FILE"
        : `cannot import from "${source}"; use metallb or kube-vip`,
    );
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (!values.from) throw new UsageError("--from FILE is required");
  if (values.context && !values.kubeconfig) {
    throw new UsageError("--context needs --kubeconfig FILE");
  }
  let announce: KubeVipAnnounce | undefined;
  if (values.announce !== undefined) {
    if (source !== "kube-vip") throw new UsageError("--announce is for kube-vip only");
    if (values.announce !== "vrrp" && values.announce !== "bgp") {
      throw new UsageError(`--announce "${values.announce}" is not allowed; use vrrp or bgp`);
    }
    announce = values.announce;
  }

  let text: string;
  try {
    text = await readInputFile(values.from, IMPORT_FILE);
  } catch (error) {
    printError(`keelson import: cannot read ${values.from}: ${errorMessage(error)}`);
    return EXIT_INVALID;
  }
  let nodes: V1Node[] | undefined;
  if (values.kubeconfig) {
    nodes = await listNodes(values.kubeconfig, values.context);
    if (nodes === undefined) return EXIT_INVALID;
  }
  let inventory: string;
  const restrictionsLost: string[] = [];
  try {
    inventory = source === "metallb"
      ? importMetallb(text, { source: values.from, nodes, restrictionsLost })
      : importKubeVip(text, { source: values.from, nodes, announce });
  } catch (error) {
    if (!(error instanceof ImportError)) throw error;
    printError(`keelson import: ${error.message}`);
    return EXIT_INVALID;
  }

  const issues = await inventoryIssues(inventory, "<stdout>");
  print(inventory.trimEnd());
  if (restrictionsLost.length > 0) {
    printError(
      [
        ...restrictionsLost.map((line) => `keelson import: ${terminalSafe(line)}`),
        `keelson import: ${restrictionsLost.length} restriction` +
        `${restrictionsLost.length === 1 ? "" : "s"} the old controller applied cannot be kept ` +
        "as written; the inventory above is narrower where it could be, never wider. Resolve " +
        "each line above before Keelson takes over.",
      ].join("\n"),
    );
  }
  if (issues.length > 0) {
    printError(
      [
        ...issues.map(formatIssue),
        `the inventory above: written, but keelson check would refuse it ` +
        `(${issues.length} problem${issues.length === 1 ? "" : "s"}); fix the lines named ` +
        "above, then run keelson check",
      ].join("\n"),
    );
    return EXIT_INVALID;
  }
  return restrictionsLost.length > 0 ? EXIT_INVALID : EXIT_OK;
}

/** Lists the cluster's Nodes (one paged list), or prints why not and returns undefined. */
async function listNodes(kubeconfig: string, context?: string): Promise<V1Node[] | undefined> {
  try {
    const settings = await resolveConnectionSettings({
      kubeconfig,
      ...(context ? { context } : {}),
    });
    // read only by construction: the client has no write method
    const client = createReadOnlyKubeClient(settings, {
      registry: new Registry(),
      userAgent: "keelson-import",
      requestTimeoutMs: NODE_LIST_TIMEOUT_MS,
    });
    try {
      const list = await listAllPages(client, "/api/v1/nodes", {
        signal: AbortSignal.timeout(NODE_LIST_TIMEOUT_MS),
      });
      if (list.ignored > 0) {
        printError(`keelson import: note: ${ignoredItemsNote("/api/v1/nodes", list.ignored)}`);
      }
      return list.items.map((item, i) => {
        const parsed = SnapshotNodeSchema.safeParse(item);
        if (!parsed.success) {
          throw new Error(
            `Node ${i} of the cluster's list is malformed: ${parsed.error.issues[0]?.message}`,
          );
        }
        return parsed.data as V1Node;
      });
    } finally {
      client.close();
    }
  } catch (error) {
    const message = error instanceof KubeconfigError ? error.message : errorMessage(error);
    printError(`keelson import: cannot list the cluster's Nodes: ${message}`);
    return undefined;
  }
}
