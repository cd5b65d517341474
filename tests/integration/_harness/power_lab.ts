/**
 * What the power tests need beside kube-apiserver: sushy-tools (the BMCs) and
 * kube-controller-manager (NotReady, taint eviction, pod GC).
 *
 * @module
 */
import { findControllerManager } from "./controller_manager.ts";
import { findSushy } from "./sushy.ts";

/**
 * Why the power lab cannot run here, or undefined when it can.
 * @returns the first missing part's reason
 */
export async function powerLabMissing(): Promise<string | undefined> {
  const sushy = await findSushy();
  if (!sushy.ok) return sushy.reason;
  const kcm = await findControllerManager();
  return kcm.ok ? undefined : kcm.reason;
}
