/**
 * Judges a keepalived file the unprivileged agent staged, for the root step that installs it:
 * accepted only when it is byte-for-byte what Keelson renders for this host from the inventory
 * (which root owns), given the one input the inventory does not fix, the Service VIPs, read back
 * from the file. The rendering decides everything else (instances, VRIDs, priorities, peers,
 * interface, track files, notify FIFO; which Service groups track their Local-traffic file is
 * read back too, and rendered only for this host's groups), so a keyword the renderer never writes (`notify_master`,
 * `track_script`, `script_user`, `include`, a second `global_defs` setting) or a VIP outside the
 * inventory's served pools makes the file differ and be refused.
 *
 * @module
 */
import { errorMessage } from "../../../src/log/error_message.ts";
import type { Config } from "../../../src/config/types.ts";
import {
  localTrackedInstancesInFile,
  renderHostKeepalived,
  serviceVipsInFile,
} from "../keepalived/announcer.ts";
import { renderWithdrawnConfig } from "../keepalived/render.ts";
import { keepalivedWithdrawal } from "../keepalived/withdrawal.ts";
import { firstDifference } from "./first_difference.ts";

/** What the staged text is judged against. */
export interface KeepalivedJudgement {
  /** The inventory, as root reads it. */
  config: Config;
  /** This machine's name. */
  host: string;
  /** The user the agent runs as: the only owner a notify FIFO may be made for. */
  agentUser: string;
}

/**
 * Why a staged keepalived file may not be installed.
 * @param text the staged file
 * @param judgement the inventory, host and agent user
 * @returns undefined when it is exactly Keelson's rendering, else a sentence naming the first
 *   difference
 */
export function stagedKeepalivedProblem(
  text: string,
  judgement: KeepalivedJudgement,
): string | undefined {
  const { config, host, agentUser } = judgement;
  let candidates: string[];
  try {
    if (keepalivedWithdrawal(config, host)) candidates = [renderWithdrawnConfig(host)];
    else {
      const serviceVips = serviceVipsInFile(text);
      // which groups track their Local-traffic file depends on the Services' policies, which
      // root does not read: taken from the file, and rendered only for groups this host has
      const localTrackInstances = localTrackedInstancesInFile(text);
      candidates = [];
      // the agent names its own user for the FIFO; without one it renders none
      for (const fifo of [{ notifyFifoUser: agentUser }, {}]) {
        const rendered = renderHostKeepalived({
          config,
          host,
          serviceVips,
          localTrackInstances,
          ...fifo,
        });
        if ("error" in rendered) return rendered.error;
        candidates.push(rendered.text);
      }
    }
  } catch (error) {
    return `Keelson cannot render keepalived for host "${host}" from the inventory: ${
      errorMessage(error)
    }`;
  }
  if (candidates.includes(text)) return undefined;
  // name the difference from the closer candidate: the one with the FIFO when the file has one
  const closest = candidates.find((c) => c.includes("vrrp_notify_fifo") === /fifo/.test(text)) ??
    candidates[0]!;
  return `not what Keelson renders for host "${host}" from the inventory: ` +
    firstDifference(text, closest);
}
