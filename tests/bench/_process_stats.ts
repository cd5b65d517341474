/**
 * What a benchmark reads about a running process from /proc: peak and current RSS and the CPU
 * time it has used. One reader for every benchmark (memory, peers, the CPU profile).
 *
 * @module
 */

/** USER_HZ on Linux: the unit of utime/stime in /proc/PID/stat. */
const CLOCK_TICKS = 100;

/**
 * Peak and current RSS of a process, in MB, from /proc/PID/status, and the CPU time it used
 * (user + system, seconds) from /proc/PID/stat.
 * @param pid the process
 * @returns the figures
 */
export async function processMemory(
  pid: number,
): Promise<{ peakMb: number; rssMb: number; cpuS: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return {
    peakMb: kb("VmHWM") / 1024,
    rssMb: kb("VmRSS") / 1024,
    cpuS: cpuSeconds(await Deno.readTextFile(`/proc/${pid}/stat`)),
  };
}

/**
 * The CPU time (user + system, seconds) in a /proc/PID/stat line.
 * @param stat the file's text
 * @returns seconds
 */
export function cpuSeconds(stat: string): number {
  // the fields after the command name (which may hold spaces); utime, stime are the 12th, 13th
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
