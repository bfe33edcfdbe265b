/**
 * After `kill -9` of a previous Node process its postmaster survives, holding the port and
 * `postmaster.pid`, and the next start must clean up after it without ever stopping a server
 * that another live demo process still uses.
 */
import { existsSync } from 'fs';
import { readFile, rm } from 'fs/promises';
import * as path from 'path';
import { SIGINT_GRACE_MS, SIGKILL_GRACE_MS } from './constants';
import {
  childPids,
  commandLine,
  isPostmasterOf,
  ownerOf,
  parentPid,
  processOwner,
  processState,
  signal,
  waitUntilGone,
} from './processes';

/**
 * Stop a leftover postmaster if (and only if) it is a postmaster of this data directory;
 * otherwise leave the pid file to PostgreSQL, which recovers from a dead pid by itself, and
 * remove it only where PostgreSQL would wrongly believe a postmaster is still running.
 */
export async function recoverLeftoverPostmaster(
  dataDir: string,
  log: (line: string) => void,
): Promise<{ sharedPid: number } | undefined> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  const pid = await readPostmasterPid(dataDir);
  if (pid === undefined) return;

  let state = processState(pid);
  if (state === 'gone') {
    log(`stale postmaster.pid (pid ${pid} is gone); PostgreSQL will recover by itself`);
    return;
  }
  if (state === 'running') {
    if (!isPostmasterOf(pid, dataDir)) {
      // The pid was reused. PostgreSQL treats a pid it may signal (same uid)
      // as a live postmaster and refuses to start; EPERM it treats as stale.
      // Only touch the file when /proc let us see what the process really is.
      const owner = processOwner(pid);
      if (owner !== undefined && owner === ownerOf(dataDir)) {
        log(
          `postmaster.pid names pid ${pid}, which is not a postmaster of ${dataDir}; removing the stale pid file`,
        );
        await rm(pidFile, { force: true });
      }
      return;
    }
    const owner = liveNodeParent(pid);
    if (owner !== undefined) {
      // Not a leftover: another demo process (alive) started it. Share it, never kill it.
      log(
        `PostgreSQL of ${dataDir} (pid ${pid}) belongs to the running process ${owner}; sharing it`,
      );
      return { sharedPid: pid };
    }
    log(
      `found a leftover postmaster of ${dataDir} (pid ${pid}, parent ${parentPid(pid) ?? '?'}); stopping it`,
    );
    const started = Date.now();
    await terminatePostmaster(pid, dataDir, log);
    log(`leftover postmaster ${pid} stopped in ${Date.now() - started} ms`);
    state = processState(pid);
  }
  // A zombie (reparented to an init that does not reap) still answers
  // kill(pid, 0), so PostgreSQL would refuse to start; it holds nothing.
  if (state === 'zombie' && existsSync(pidFile)) {
    log(`postmaster.pid names zombie pid ${pid}; removing the stale pid file`);
    await rm(pidFile, { force: true });
  }
  return undefined;
}

/** The port a running postmaster listens on: line 4 of postmaster.pid. */
export async function postmasterPort(dataDir: string): Promise<number | undefined> {
  try {
    const port = Number(
      (await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[3],
    );
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

/** The parent of a postmaster when it is a live Node process: the demo that started it. */
function liveNodeParent(pid: number): number | undefined {
  const parent = parentPid(pid);
  if (parent === undefined || parent <= 1 || processState(parent) !== 'running') return undefined;
  const executable = commandLine(parent)?.[0] ?? '';
  return path.basename(executable).startsWith('node') ? parent : undefined;
}

/** SIGINT (fast shutdown), then SIGKILL; resolves once the postmaster and its children are gone. */
async function terminatePostmaster(
  pid: number,
  dataDir: string,
  log: (line: string) => void,
): Promise<void> {
  // Never signal anything but a postmaster of this very data directory.
  if (!isPostmasterOf(pid, dataDir)) return;
  signal(pid, 'SIGINT');
  if (await waitUntilGone(pid, SIGINT_GRACE_MS)) return;

  // Its backends keep the shared memory attached after the postmaster dies;
  // the next start fails until they are gone, so remember them now.
  const children = childPids(pid);
  if (!isPostmasterOf(pid, dataDir)) return;
  log(`postmaster ${pid} ignored SIGINT for ${SIGINT_GRACE_MS} ms; sending SIGKILL`);
  signal(pid, 'SIGKILL');
  if (!(await waitUntilGone(pid, SIGKILL_GRACE_MS))) {
    throw new Error(`PostgreSQL postmaster ${pid} of ${dataDir} survived SIGKILL`);
  }
  for (const child of children) {
    if (await waitUntilGone(child, SIGKILL_GRACE_MS)) continue;
    // Still a PostgreSQL process (its title is "postgres: ...")? Then it is ours.
    if (commandLine(child)?.[0]?.startsWith('postgres')) signal(child, 'SIGKILL');
    await waitUntilGone(child, SIGKILL_GRACE_MS);
  }
}

async function readPostmasterPid(dataDir: string): Promise<number | undefined> {
  let content: string;
  try {
    content = await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  // First line: the pid (negative for a single-user backend).
  const pid = Math.abs(Number.parseInt(content.split('\n')[0] ?? '', 10));
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}
