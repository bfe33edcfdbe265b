import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux the benchmark targets

/**
 * CPU time used so far by the PostgreSQL server of `dataDir`, in milliseconds: its backends
 * that are alive, plus the ones that exited (the postmaster's reaped children). Linux only
 * (/proc); undefined elsewhere, or when the server is not found. A server given by
 * `DATABASE_URL` may be on another machine, so it is not measured.
 */
export function postgresCpuMilliseconds(dataDir: string): number | undefined {
  try {
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const own = stat(postmaster);
    if (!own) return undefined;
    let ticks = own.childrenTicks;
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const child = stat(Number(name));
      if (child?.parent === postmaster) ticks += child.ownTicks;
    }
    return (ticks / CLOCK_TICKS_PER_SECOND) * 1000;
  } catch {
    return undefined;
  }
}

function stat(
  pid: number,
): { parent: number; ownTicks: number; childrenTicks: number } | undefined {
  let content: string;
  try {
    content = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone meanwhile
  }
  // "pid (comm) state ppid ...": comm may contain spaces; fields 14-17 are utime, stime,
  // cutime, cstime (man 5 proc), at offsets 11-14 after the command.
  const fields = content
    .slice(content.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return {
    parent: fields[1],
    ownTicks: fields[11] + fields[12],
    childrenTicks: fields[13] + fields[14],
  };
}
