import { Pool } from 'pg';
import { databaseUrl } from './database-url';

/**
 * A separate connection pool for assertions: tests read what was committed, exactly as another
 * client of the database would, not what the app's own connections believe.
 */
export class TestDatabase {
  private readonly pool = new Pool({ connectionString: databaseUrl(), max: 4 });

  async query<T extends Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
  }

  /**
   * Runs `sql` in a transaction on a connection of its own and leaves it open, uncommitted:
   * its row locks stay held until `rollback()`, as a twin that is still running would hold them.
   */
  async holdUncommitted(
    sql: string,
    params: unknown[] = [],
  ): Promise<{ rollback(): Promise<void> }> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(sql, params);
    } catch (error) {
      client.release(true);
      throw error;
    }
    return {
      rollback: async () => {
        try {
          await client.query('ROLLBACK');
        } finally {
          client.release();
        }
      },
    };
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
