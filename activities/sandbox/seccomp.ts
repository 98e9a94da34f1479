import { chmodSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A seccomp filter for sandboxed commands, as classic BPF that bubblewrap installs (`--seccomp
 * <fd>`) before it runs the command. It refuses one thing the namespaces cannot: setting the
 * setuid or setgid bit. Inside the sandbox the command is its own user's root, so it owns every
 * file it writes and may `chmod u+s` one; on the host that file is a setuid program of the
 * worker's user (of root, for a root worker) in the workspace, which any local user who can reach
 * the folder would run as the worker. So `chmod`, `fchmod`, `fchmodat(2)`, and `open`, `openat`,
 * `creat`, `mknod(at)` with a mode that holds S_ISUID or S_ISGID fail with EPERM; `openat2` (its
 * mode is in a struct the filter cannot read) and io_uring (which opens files on the kernel's
 * side) fail with ENOSYS, so callers fall back to `openat`. `mknod(at)` of a FIFO fails with EPERM
 * too: opening a FIFO for reading waits for a writer, and the worker's own git opens `.gitignore`,
 * `.gitattributes` and `.gitmodules` in any folder of the workspace (status, the snapshot of the
 * per-attempt commit and of the diff policy): a FIFO left there held it until its timeout, ten
 * minutes for each command of a snapshot. So do the kernel's keyrings (not
 * namespaced: `/proc/keys` inside lists the host's), bpf, perf_event_open and userfaultfd, which
 * Docker's default profile refuses too: kernel surface no command needs. `fallocate` fails with
 * EOPNOTSUPP, as on a file system without it (posix_fallocate then writes the blocks, and callers
 * that only preallocate go on without): it takes a gigabyte of disk in a millisecond, faster than
 * the worker's watch of the free disk (LOOPWRIGHT_SANDBOX_DISK_FREE, sandbox.ts) can stop it,
 * where writing the same takes the command the time the watch needs. `ptrace`,
 * `process_vm_readv`, `process_vm_writev` and `pidfd_getfd` fail with EPERM, as for a process
 * without CAP_SYS_PTRACE under Docker's profile: every process of a command runs as the same user,
 * so any of them could otherwise take another's open files or memory. A child of the test runner
 * took the runner's connection to the worker's results socket (pidfd_getfd) and sent forged
 * results through it (test/gate/cheats-results.test.ts). Syscalls of another ABI (x32, i386 on
 * x86-64) fail with ENOSYS. Everything else is allowed.
 */

const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const AND_K = 0x54;
const RET_K = 0x06;
const ALLOW = 0x7fff0000;
const ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const EOPNOTSUPP = 95;
const S_ISUID_ISGID = 0o6000;
const S_IFMT = 0o170000;
const S_IFIFO = 0o010000;
const X32_BIT = 0x40000000;

interface Abi {
  audit: number;
  /** Syscall number → index of the argument that holds the mode. */
  mode: Array<[number, number]>;
  /** The syscalls among `mode` that make a node of the type in their mode (mknod, mknodat): no FIFO. */
  mknod: number[];
  /** Syscalls refused with ENOSYS. */
  nosys: number[];
  /** Syscalls refused with EOPNOTSUPP (fallocate). */
  notsup: number[];
  /** Syscalls refused with EPERM (ptrace, process_vm_readv, process_vm_writev, pidfd_getfd). */
  eperm: number[];
  /** Whether syscall numbers with the x32 bit must be refused. */
  x32?: boolean;
}

const ABIS: Partial<Record<NodeJS.Architecture, Abi>> = {
  x64: {
    audit: 0xc000003e,
    // chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod, mknodat
    mode: [
      [90, 1],
      [91, 1],
      [268, 2],
      [452, 2],
      [2, 2],
      [257, 3],
      [85, 1],
      [133, 1],
      [259, 2],
    ],
    mknod: [133, 259],
    // openat2, io_uring_setup; add_key, request_key, keyctl; bpf, perf_event_open, userfaultfd
    nosys: [437, 425, 248, 249, 250, 321, 298, 323],
    notsup: [285],
    eperm: [101, 310, 311, 438],
    x32: true,
  },
  arm64: {
    audit: 0xc00000b7,
    // fchmod, fchmodat, fchmodat2, openat, mknodat
    mode: [
      [52, 1],
      [53, 2],
      [452, 2],
      [56, 3],
      [33, 2],
    ],
    mknod: [33],
    // openat2, io_uring_setup; add_key, request_key, keyctl; bpf, perf_event_open, userfaultfd
    nosys: [437, 425, 217, 218, 219, 280, 241, 282],
    notsup: [47],
    eperm: [117, 270, 271, 438],
  },
};

type Insn = [code: number, jt: number, jf: number, k: number];

/** The filter's instructions for `arch`, or null when there is none for it. */
export function seccompProgram(arch: NodeJS.Architecture = process.arch): Buffer | null {
  const abi = ABIS[arch];
  if (!abi) return null;
  const prog: Insn[] = [];
  const nosys: Insn = [RET_K, 0, 0, ERRNO | ENOSYS];
  prog.push([LD_W_ABS, 0, 0, 4]); // arch
  prog.push([JEQ_K, 1, 0, abi.audit]);
  prog.push(nosys);
  prog.push([LD_W_ABS, 0, 0, 0]); // syscall number
  if (abi.x32) {
    prog.push([JGE_K, 0, 1, X32_BIT]);
    prog.push(nosys);
  }
  for (const nr of abi.nosys) {
    prog.push([JEQ_K, 0, 1, nr]);
    prog.push(nosys);
  }
  for (const nr of abi.notsup) {
    prog.push([JEQ_K, 0, 1, nr]);
    prog.push([RET_K, 0, 0, ERRNO | EOPNOTSUPP]);
  }
  for (const nr of abi.eperm) {
    prog.push([JEQ_K, 0, 1, nr]);
    prog.push([RET_K, 0, 0, ERRNO | EPERM]);
  }
  // Each mode syscall: if it is this one, load its mode argument (low 32 bits: little-endian) and
  // test it; for mknod(at), its file type too.
  for (const [nr, arg] of abi.mode) {
    const fifo: Insn[] = abi.mknod.includes(nr)
      ? [
          [AND_K, 0, 0, S_IFMT],
          [JEQ_K, 0, 1, S_IFIFO],
          [RET_K, 0, 0, ERRNO | EPERM],
        ]
      : [];
    prog.push([JEQ_K, 0, 4 + fifo.length, nr]);
    prog.push([LD_W_ABS, 0, 0, 16 + 8 * arg]);
    prog.push([JSET_K, 0, 1, S_ISUID_ISGID]);
    prog.push([RET_K, 0, 0, ERRNO | EPERM]);
    prog.push(...fifo);
    prog.push([RET_K, 0, 0, ALLOW]);
  }
  prog.push([RET_K, 0, 0, ALLOW]);
  const buf = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    buf.writeUInt16LE(code, i * 8);
    buf.writeUInt8(jt, i * 8 + 2);
    buf.writeUInt8(jf, i * 8 + 3);
    buf.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buf;
}

let written: string | undefined;

/**
 * The filter as a read-only file of this process's own (bubblewrap reads it from a descriptor
 * opened for each command), or null on an architecture without one.
 */
export function seccompFile(): string | null {
  if (written && statSync(written, { throwIfNoEntry: false })) return written;
  const prog = seccompProgram();
  if (!prog) return null;
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'loopwright-seccomp-')), 'filter.bpf');
  writeFileSync(file, prog);
  chmodSync(file, 0o444);
  return (written = file);
}
