/** Process exit codes shared by every subcommand. */
export const EXIT_OK = 0;
/** The input (configuration, state file) is invalid. */
export const EXIT_INVALID = 1;
/** The command line itself is wrong. */
export const EXIT_USAGE = 2;
