import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

/** The kernel's clock ticks per second (`getconf CLK_TCK`, 100 on Linux when it cannot be read). */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * CPU seconds process `pid` has used so far, all its threads: user + system time, plus the
 * children it has waited for (cutime + cstime), from /proc/<pid>/stat. NaN when it cannot be read.
 */
export function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which sits in parentheses and may hold spaces: state is field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [utime = NaN, stime = NaN, cutime = NaN, cstime = NaN] = [11, 12, 13, 14].map((i) => Number(fields[i]));
    return (utime + stime + cutime + cstime) / clockTicks();
  } catch {
    return NaN;
  }
}

/** CPU seconds this process has used so far (user + system), from process.cpuUsage(). */
export function selfCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}
