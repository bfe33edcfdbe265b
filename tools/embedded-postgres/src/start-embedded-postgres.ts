/**
 * The one entry point: places, recovers, initialises and starts a cluster, and hands back a
 * stop() that the app calls when it is done with its requests.
 */
import { existsSync } from 'fs';
import { mkdir } from 'fs/promises';
import * as path from 'path';
import { ensureDatabase, initialiseCluster } from './cluster';
import { DEFAULT_START_TIMEOUT_MS, HOST, PASSWORD, POSTGRES_USER } from './constants';
import { describe, failure, LogTail } from './log-tail';
import { postmasterPort, recoverLeftoverPostmaster } from './orphan-recovery';
import { placeForAccount } from './placement';
import { installedPostgres } from './platform-binaries';
import { postgresAccount } from './postgres-account';
import {
  readyOrExited,
  spawnPostmaster,
  stopPostmaster,
  stopWithTheProcess,
  terminateChild,
} from './postmaster';
import { withTimeout } from './with-timeout';

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
  /**
   * The server's `max_connections` (default: PostgreSQL's own, 100). Not applied when `dataDir`
   * is already served by a running PostgreSQL, which keeps its own.
   */
  maxConnections?: number;
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

export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const log = options.log ?? ((line: string) => console.log(`[embedded-postgres] ${line}`));
  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const { port, database } = options;
  if (!path.isAbsolute(options.dataDir))
    throw new Error(`dataDir must be absolute, got "${options.dataDir}"`);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`Invalid port ${port}`);
  if (!database) throw new Error('database must not be empty');
  const { maxConnections } = options;
  if (maxConnections !== undefined && (!Number.isInteger(maxConnections) || maxConnections < 1))
    throw new Error(`Invalid maxConnections ${maxConnections}`);
  const url = `postgres://${POSTGRES_USER}:${PASSWORD}@${HOST}:${port}/${encodeURIComponent(database)}`;

  const requested = {
    dataDir: path.resolve(options.dataDir),
    installDir: options.installDir ?? installedPostgres(),
  };
  await mkdir(path.dirname(requested.dataDir), { recursive: true });
  // PostgreSQL refuses to run as root: then it runs as the `postgres` user, from where that user can reach.
  const account = process.getuid?.() === 0 ? await postgresAccount(log) : undefined;
  const { dataDir, installDir } = account
    ? await placeForAccount(requested, account, options.reachableDir, log)
    : requested;

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
    return { url, dataDir, stop: () => Promise.resolve() };
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
  const child = spawnPostmaster(installDir, dataDir, port, account, maxConnections);
  try {
    await withTimeout(readyOrExited(child, tail), timeoutMs, 'PostgreSQL start');
  } catch (error) {
    // A timeout may leave it running: leave nothing behind.
    await terminateChild(child, log).catch((cause: unknown) => log(describe(cause)));
    throw failure(
      `PostgreSQL did not start on ${HOST}:${port} (data directory ${dataDir})`,
      error,
      tail,
    );
  }
  log(
    `PostgreSQL started in ${Date.now() - startStarted} ms on ${HOST}:${port} (pid ${child.pid ?? '?'})`,
  );

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= stopPostmaster(child, log));
  child.once('exit', (code, signal) => {
    if (!stopping)
      log(`PostgreSQL exited unexpectedly (code ${code ?? '-'}, signal ${signal ?? '-'})`);
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
