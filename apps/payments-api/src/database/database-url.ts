import { resolve } from 'node:path';
import type { Logger } from '@nestjs/common';
import { startEmbeddedPostgres } from '#tools/embedded-postgres';

/** The database to use, and how to stop it when it is the embedded one (a no-op otherwise). */
export interface ResolvedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * `DATABASE_URL` when given; otherwise an embedded PostgreSQL with its data under `.data/`
 * (git-ignored), so `npm start` works on a machine with no database at all.
 */
export async function resolveDatabase(logger: Logger): Promise<ResolvedDatabase> {
  if (process.env.DATABASE_URL)
    return { url: process.env.DATABASE_URL, stop: () => Promise.resolve() };
  const port = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
  const handle = await startEmbeddedPostgres({
    dataDir: resolve(process.env.EMBEDDED_PG_DIR ?? '.data/postgres'),
    port,
    database: 'payments',
    log: (line) => logger.log(line),
  });
  logger.log(
    `DATABASE_URL is not set: using an embedded PostgreSQL on port ${port}, data in ${handle.dataDir}`,
  );
  return handle;
}

/** The URL only, for commands that leave the embedded server to stop with the process. */
export async function resolveDatabaseUrl(logger: Logger): Promise<string> {
  return (await resolveDatabase(logger)).url;
}
