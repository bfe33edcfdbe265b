import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';

/** Where the benchmark runs what: the demo processes on one CPU, everything else on the rest. */
export interface CpuPinning {
  /** The CPU every demo process is started on. */
  demoCpu: number;
  /** The CPUs of this process (the load generator) and the PostgreSQL it starts, e.g. `0`. */
  otherCpus: string;
}

/**
 * Pins this process (and so the PostgreSQL it starts and autocannon) to all CPUs but the last,
 * and tells where to start the demo processes: on the last one, so that the process measured
 * never shares its CPU with the load generator. Every demo must be started with `demoCpu`
 * explicitly: a child started without it inherits this process's pinning.
 * Undefined (nothing pinned) without Linux's `taskset` or with a single CPU.
 */
export function pinCpus(): CpuPinning | undefined {
  const count = cpus().length;
  if (process.platform !== 'linux' || count < 2) return undefined;
  const otherCpus = count === 2 ? '0' : `0-${count - 2}`;
  const pinned = spawnSync('taskset', ['-a', '-p', '-c', otherCpus, String(process.pid)], {
    stdio: 'ignore',
  });
  if (pinned.error || pinned.status !== 0) return undefined;
  return { demoCpu: count - 1, otherCpus };
}
