import { resolve } from 'node:path';
import type { Logger } from '@nestjs/common';
import { startEmbeddedPostgres } from './embedded-postgres';

/**
 * `DATABASE_URL` when given; otherwise an embedded PostgreSQL with its data under `.data/`
 * (git-ignored), so `npm start` works on a machine with no database at all.
 */
export async function resolveDatabaseUrl(logger: Logger): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const dataDir = resolve(process.env.EMBEDDED_PG_DIR ?? '.data/postgres');
  const port = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
  const database = await startEmbeddedPostgres({
    dataDir,
    port,
    database: 'payments',
    log: (line) => logger.log(line),
  });
  logger.log(`DATABASE_URL is not set: using an embedded PostgreSQL on port ${port}, data in ${dataDir}`);
  return database.url;
}
