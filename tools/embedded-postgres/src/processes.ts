/**
 * What a pid is, read from /proc, so that orphan recovery signals a process only once it knows
 * the process is a postmaster of our data directory: a pid from postmaster.pid may have been
 * reused by anything. Without /proc (not Linux) nothing looks like a postmaster, so nothing is
 * signalled.
 */
import { readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from 'fs';
import * as path from 'path';

const POLL_MS = 50;

export type ProcessState = 'running' | 'zombie' | 'gone';

export function processState(pid: number): ProcessState {
  // pid 0 or -1 would signal a whole process group: never.
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return 'gone';
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM means it exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
  }
  const state = procStat(pid)?.state;
  return state === 'Z' || state === 'X' ? 'zombie' : 'running';
}

export async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (processState(pid) === 'running') {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

/** True when /proc/<pid>/cmdline is `postgres ... -D <dataDir>` (same directory after resolving). */
export function isPostmasterOf(pid: number, dataDir: string): boolean {
  const argv = commandLine(pid);
  if (!argv || argv.length === 0) return false;
  if (!['postgres', 'postmaster'].includes(path.basename(argv[0]))) return false;
  let cwd: string | undefined;
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    cwd = undefined;
  }
  const wanted = realpathOr(dataDir);
  for (let i = 0; i < argv.length; i++) {
    const value =
      argv[i] === '-D' ? argv[i + 1] : argv[i].startsWith('-D') ? argv[i].slice(2) : undefined;
    if (!value) continue;
    if (!path.isAbsolute(value) && cwd === undefined) continue;
    if (realpathOr(path.resolve(cwd ?? '/', value)) === wanted) return true;
  }
  return false;
}

export function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((arg) => arg !== '');
  } catch {
    return undefined; // gone, or no /proc (not Linux): then we never signal it
  }
}

function procStat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', ppid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

export function parentPid(pid: number): number | undefined {
  return procStat(pid)?.ppid;
}

export function childPids(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries
    .filter((name) => /^\d+$/.test(name) && parentPid(Number(name)) === pid)
    .map(Number);
}

export function processOwner(pid: number): number | undefined {
  try {
    const uid = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1];
    return uid === undefined ? undefined : Number(uid);
  } catch {
    return undefined;
  }
}

export function ownerOf(file: string): number | undefined {
  try {
    return statSync(file).uid;
  } catch {
    return undefined;
  }
}

export function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone: that is what we wanted.
  }
}

function realpathOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
