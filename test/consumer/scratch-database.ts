import { Pool } from 'pg';
import { databaseUrl } from '../support/test-app';

/**
 * A database of its own for one scratch app, on the run's PostgreSQL: the app runs its
 * migrations there and the other suites never see its tables. Dropped again by `drop()`.
 */
export class ScratchDatabase {
  private readonly pool: Pool;

  private constructor(
    readonly name: string,
    readonly url: string,
  ) {
    this.pool = new Pool({ connectionString: url, max: 2 });
  }

  static async create(name: string): Promise<ScratchDatabase> {
    // Interpolated into DDL below: only plain identifiers.
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
    await admin(async (pool) => {
      await pool.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await pool.query(`CREATE DATABASE ${name}`);
    });
    const url = new URL(databaseUrl());
    url.pathname = `/${name}`;
    return new ScratchDatabase(name, url.toString());
  }

  async query<T extends Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
  }

  async drop(): Promise<void> {
    await this.pool.end();
    await admin((pool) => pool.query(`DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)`));
  }
}

async function admin<T>(work: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = new Pool({ connectionString: databaseUrl(), max: 1 });
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}
