import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';

/** Processes as server/left-behind.ts names them, for the tests of folders a killed worker left. */

/** Field 22 of /proc/<pid>/stat (the process's start time), as the folders record it. */
export const startOf = (pid: number): string => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
};
/** This process's boot and pid namespace. */
export const here = () => ({
  boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
  pidNamespace: readlinkSync('/proc/self/ns/pid'),
});
/** A process that has ended: its pid and start time, as a folder it made names them. */
export async function goneProcess(): Promise<{ boot: string; pidNamespace: string; pid: number; start: string }> {
  const child = spawn('sleep', ['5']);
  await new Promise((resolve) => child.on('spawn', resolve));
  const start = startOf(child.pid!);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return { ...here(), pid: child.pid!, start };
}
/** Waits (up to 2 s) until none of `paths` exists (the sweep removes in the background). */
export async function gone(...paths: string[]): Promise<void> {
  for (let i = 0; i < 100 && paths.some((p) => existsSync(p)); i++) await new Promise((r) => setTimeout(r, 20));
}
