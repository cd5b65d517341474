/**
 * Runs `ApiserverProbe` until SIGTERM; started inside a lab node's namespace by the e2e test.
 * Usage: _probe_main.ts URL TRACK_FILE
 *
 * @module
 */
import { ApiserverProbe } from "../../providers/baremetal/control_plane/apiserver_probe.ts";

const [url, trackFile] = Deno.args;
if (!url || !trackFile) throw new TypeError("usage: _probe_main.ts URL TRACK_FILE");
const controller = new AbortController();
Deno.addSignalListener("SIGTERM", () => controller.abort());
await new ApiserverProbe({ url, trackFile, intervalMs: 200, timeoutMs: 300, rise: 2, fall: 2 })
  .run(controller.signal);
Deno.exit(0);
