/**
 * The PV-labels controller and its pure helpers.
 *
 * @module
 */
export { PvLabelsController, type PvLabelsDeps } from "./pv_labels_controller.ts";
export { pinnedNode, resolvePinnedNode, volumeLabelsToSet } from "./pv_zone_labels.ts";
