/**
 * The server process we spawn: its start, its readiness, its stop. The package's exit hook
 * stopped the server at the first SIGINT or SIGTERM, before the app had finished its requests;
 * here the app decides when it stops, and a stop does not hang when the server already died.
 */
import { type ChildProcess, spawn } from 'child_process';
import * as path from 'path';
import { HOST, SIGINT_GRACE_MS, SIGKILL_GRACE_MS } from './constants';
import { follow, type LogTail } from './log-tail';
import { type PostgresAccount, processOptions } from './postgres-account';

const READY = 'database system is ready to accept connections';

export function spawnPostmaster(
  installDir: string,
  dataDir: string,
  port: number,
  account: PostgresAccount | undefined,
  maxConnections?: number,
): ChildProcess {
  return spawn(
    path.join(installDir, 'bin', 'postgres'),
    [
      ...['-D', dataDir, '-p', String(port)],
      // Loopback only, whatever the machine's name resolution says.
      ...['-c', `listen_addresses=${HOST}`],
      // No Unix socket: its lock file (/tmp/.s.PGSQL.<port>.lock) outlives a killed postmaster
      // and blocks the next start, and /tmp is shared.
      ...['-c', 'unix_socket_directories='],
      // The start is recognised by an English log line.
      ...['-c', 'lc_messages=C'],
      ...(maxConnections === undefined ? [] : ['-c', `max_connections=${maxConnections}`]),
    ],
    // A group of its own: a Ctrl-C in the terminal goes to the app, which stops the server
    // once its requests are done, instead of to the server in the middle of them.
    { ...processOptions(dataDir, account), detached: true },
  );
}

/** Resolves once the postmaster logs that it accepts connections; rejects if it exits first. */
export function readyOrExited(child: ChildProcess, tail: LogTail): Promise<void> {
  follow(child, tail);
  return new Promise<void>((resolve, reject) => {
    let recent = ''; // the line may arrive split across chunks
    child.stderr?.on('data', (chunk: Buffer) => {
      recent = (recent + chunk.toString('utf8')).slice(-READY.length * 4);
      if (recent.includes(READY)) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`postgres exited (code ${code ?? '-'}, signal ${signal ?? '-'})`)),
    );
  });
}

export async function stopPostmaster(
  child: ChildProcess,
  log: (line: string) => void,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    log('PostgreSQL had already stopped');
    return;
  }
  const started = Date.now();
  await terminateChild(child, log);
  log(`PostgreSQL stopped in ${Date.now() - started} ms`);
}

/** Postmasters started here and not stopped yet, with their handle's stop(). */
const running = new Map<ChildProcess, () => Promise<void>>();
let exitFallbacksInstalled = false;

/**
 * Stops the postmaster when the process ends without stopping it: on process.exit() (SIGINT sent
 * at once; an 'exit' listener cannot wait) and on a SIGINT, SIGTERM or SIGHUP that nobody else
 * listens for (stopped, then the signal raised again). An app with its own listener for the
 * signal stops the server itself, in its own order.
 */
export function stopWithTheProcess(child: ChildProcess, stop: () => Promise<void>): void {
  running.set(child, stop);
  child.once('exit', () => running.delete(child));
  if (exitFallbacksInstalled) return;
  exitFallbacksInstalled = true;
  process.on('exit', () => {
    for (const postmaster of running.keys()) postmaster.kill('SIGINT');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const fallback = () => {
      if (process.listenerCount(signal) > 1) return;
      process.off(signal, fallback);
      void Promise.all(
        [...running.values()].map((stopOne) => stopOne().catch(() => undefined)),
      ).finally(() => process.kill(process.pid, signal));
    };
    process.on(signal, fallback);
  }
}

/** Stops a postmaster we spawned ourselves: no /proc check needed, and right after spawn its cmdline may still be Node's. */
export async function terminateChild(
  child: ChildProcess,
  log: (line: string) => void,
): Promise<void> {
  // kill() is a no-op once Node has reaped the child: it cannot hit a reused pid.
  child.kill('SIGINT');
  if (await waitForExit(child, SIGINT_GRACE_MS)) return;
  log(`postmaster ${child.pid ?? '?'} ignored SIGINT for ${SIGINT_GRACE_MS} ms; sending SIGKILL`);
  child.kill('SIGKILL');
  if (!(await waitForExit(child, SIGKILL_GRACE_MS))) {
    throw new Error(`PostgreSQL postmaster ${child.pid ?? '?'} survived SIGKILL`);
  }
}

/** Resolves true once the child has exited, false after timeoutMs (without keeping the process alive). */
function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined)
    return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, timeoutMs);
    child.once('exit', onExit);
  });
}
