/**
 * What `keelson render keepalived` and `keelson render bird` share: read the inventory and the
 * snapshot, ask the inventory's provider for one host's file of one announcer
 * (`renderHostFile`), print the text on stdout and the provider's notes on stderr.
 *
 * @module
 */
import type { HostFileRequest } from "../cloud/host_file.ts";
import { EXIT_INVALID, EXIT_OK } from "./exit_codes.ts";
import { offlineProvider } from "./offline_provider.ts";
import { print, printError } from "./output.ts";
import { UsageError } from "./usage_error.ts";
import { readInventory, readSnapshot } from "./command_inputs.ts";
import { servingNote } from "./serving_note.ts";

/**
 * Reads the inventory and the snapshot, asks the inventory's provider for the host's file and
 * prints it, with its notes on stderr.
 * @param request what to render (the snapshot is read from `state`)
 * @param state the snapshot file, when given
 * @returns 0 when the file was printed, 1 when the inputs cannot be used
 * @throws {UsageError} when the provider refuses a command-line value (exit 2)
 */
export async function printHostFile(
  request: Omit<HostFileRequest, "snapshot">,
  state: string | undefined,
): Promise<number> {
  const config = await readInventory(request.configFile);
  if (!config) return EXIT_INVALID;
  let snapshot: HostFileRequest["snapshot"];
  if (state) {
    const read = await readSnapshot(state);
    if (!read) return EXIT_INVALID;
    snapshot = { file: state, ...read };
  }
  const provider = offlineProvider(config);
  if (!provider) return EXIT_INVALID;
  if (!provider.renderHostFile) {
    printError(`Provider "${provider.providerName}" renders no host file`);
    return EXIT_INVALID;
  }
  const rendered = await provider.renderHostFile({ ...request, ...(snapshot ? { snapshot } : {}) });
  if ("error" in rendered) {
    if (rendered.usage) throw new UsageError(rendered.error);
    printError(rendered.error);
    return EXIT_INVALID;
  }
  if (request.announcer === "keepalived" || request.announcer === "bird") {
    printError(servingNote(config, request.host, request.announcer === "bird" ? "bgp" : "vrrp"));
  }
  for (const note of rendered.notes) printError(note);
  print(rendered.text);
  return EXIT_OK;
}
