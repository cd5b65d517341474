/**
 * Keelson: a cloud-controller-manager for Kubernetes clusters on their own hardware.
 *
 * @module
 */
import { dispatch } from "./src/cli/dispatch.ts";

if (import.meta.main) {
  Deno.exit(await dispatch(Deno.args));
}
