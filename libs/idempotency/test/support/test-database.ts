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

  /** A twin of `scope`'s `key` still running: its claim inserted and not committed (no tenant). */
  holdRunningClaim(scope: string, key: string): Promise<{ rollback(): Promise<void> }> {
    return this.holdUncommitted(
      `INSERT INTO idempotency_keys (tenant_id, endpoint, idem_key, request_hash, status, expires_at)
       VALUES ('', $1, $2, 'twin', 'in_progress', now() + interval '1 hour')`,
      [scope, key],
    );
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
