/** Keelson's version, printed by `keelson version` and exported as `keelson_build_info`. */
export const VERSION = "0.1.0";
