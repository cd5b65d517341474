/**
 * The hosts' heartbeats as a test reads them from the API: each host's report, decoded from its
 * heartbeat Lease as `keelson status` decodes it.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import {
  decodeHostReport,
  HEARTBEAT_LABEL,
  HEARTBEAT_NAMESPACE,
  HOST_REPORT_ANNOTATION,
  type HostReport,
} from "../../../src/status/host_report.ts";
import type { ControlPlane } from "./control_plane.ts";

/**
 * Each host's heartbeat report, by host; a Lease without a report, or with one that does not
 * decode, is left out.
 */
export async function hostReports(cp: ControlPlane): Promise<Map<string, HostReport>> {
  const leases = await cp.requestOk<{ items: V1Lease[] }>(
    "GET",
    `/apis/coordination.k8s.io/v1/namespaces/${HEARTBEAT_NAMESPACE}/leases?labelSelector=${
      encodeURIComponent(HEARTBEAT_LABEL)
    }`,
  );
  const reports = new Map<string, HostReport>();
  for (const lease of leases.items) {
    const text = lease.metadata?.annotations?.[HOST_REPORT_ANNOTATION];
    const report = text === undefined ? undefined : decodeHostReport(text);
    if (report && !("error" in report)) reports.set(report.host, report);
  }
  return reports;
}
