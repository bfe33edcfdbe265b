import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { findFreePort, startEmbeddedPostgres } from '#tools/embedded-postgres';
import { postgresCpuMilliseconds } from './postgres-cpu';
import { REPO_ROOT } from './repo-paths';

export interface BenchDatabase {
  url: string;
  /** What the report says about the server, e.g. `PostgreSQL 18.1 (embedded)`. */
  description: string;
  /** CPU milliseconds the server has used so far; undefined when it cannot be measured. */
  cpuMilliseconds(): number | undefined;
  close(): Promise<void>;
}

/**
 * `DATABASE_URL` when set (give it a throwaway database: the benchmark adds orders and keys),
 * else an embedded PostgreSQL in a fresh directory that is removed afterwards, so a run never
 * touches the demo's own data in `.data/postgres`.
 */
export async function openBenchDatabase(env: NodeJS.ProcessEnv): Promise<BenchDatabase> {
  if (env.DATABASE_URL) {
    const url = env.DATABASE_URL;
    return {
      url,
      description: `${await serverVersion(url)} (DATABASE_URL)`,
      cpuMilliseconds: () => undefined,
      close: () => Promise.resolve(),
    };
  }
  const dataDir = resolve(REPO_ROOT, '.data', `bench-postgres-${process.pid}`);
  rmSync(dataDir, { recursive: true, force: true });
  const handle = await startEmbeddedPostgres({
    dataDir,
    port: await findFreePort(),
    database: 'payments_bench',
    log: () => undefined,
  });
  return {
    url: handle.url,
    description: `${await serverVersion(handle.url)} (embedded, default settings)`,
    // handle.dataDir: elsewhere when the postgres user cannot reach the checkout (running as root).
    cpuMilliseconds: () => postgresCpuMilliseconds(handle.dataDir),
    close: async () => {
      await handle.stop();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(handle.dataDir, { recursive: true, force: true });
    },
  };
}

async function serverVersion(url: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return `PostgreSQL ${rows[0].server_version.split(' ')[0]}`;
  } finally {
    await client.end();
  }
}
