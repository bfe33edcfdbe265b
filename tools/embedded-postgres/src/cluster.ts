/** The cluster on disk (initdb) and the database inside it. */
import { spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { chown, mkdir, rm, writeFile } from 'fs/promises';
import * as path from 'path';
import { Client } from 'pg';
import { HOST, PASSWORD, POSTGRES_USER } from './constants';
import { follow, type LogTail } from './log-tail';
import { type PostgresAccount, processOptions } from './postgres-account';
import { withTimeout } from './with-timeout';

export async function initialiseCluster(
  installDir: string,
  dataDir: string,
  account: PostgresAccount | undefined,
  tail: LogTail,
  timeoutMs: number,
): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  if (account) await chown(dataDir, account.uid, account.gid);
  // initdb reads the superuser's password from a file: beside the cluster, where its user can read it.
  const passwordFile = path.join(
    path.dirname(dataDir),
    `.pwfile-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (account) await chown(passwordFile, account.uid, account.gid);
    const child = spawn(
      path.join(installDir, 'bin', 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        `--username=${POSTGRES_USER}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      processOptions(dataDir, account),
    );
    follow(child, tail);
    const closed = new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) =>
        code === 0
          ? resolve()
          : reject(new Error(`initdb exited with code ${code ?? '-'}, signal ${signal ?? '-'}`)),
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

export async function ensureDatabase(
  port: number,
  database: string,
  log: (line: string) => void,
): Promise<void> {
  const client = new Client({
    host: HOST,
    port,
    user: POSTGRES_USER,
    password: PASSWORD,
    database: 'postgres',
  });
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
