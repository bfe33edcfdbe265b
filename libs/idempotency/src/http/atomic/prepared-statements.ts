import { randomBytes } from 'node:crypto';
import {
  type EscapeLiteral,
  executeStatement,
  inlineParameters,
  type SqlStatement,
} from '../../shared/sql-literals';

/**
 * Which of the library's named statements each connection has prepared (SQL `PREPARE` lasts
 * as long as the session, and survives a rollback). A statement is prepared on first use, in
 * the same round trip, and runs as `EXECUTE` after that: PostgreSQL parses and plans it once
 * per connection instead of once per request.
 *
 * Prepared names carry a random suffix per connection, so a name can never meet a statement of
 * the same name left in a server session by someone else (a pooler handing over sessions).
 */
export class PreparedStatements {
  private readonly byConnection = new WeakMap<object, Map<string, string>>();
  /** How many times a connection found its statements gone (SQLSTATE 26000). */
  private vanished = 0;
  /** Names whose PREPARE went out in a batch not yet known to have run, per connection. */
  private readonly unconfirmed = new WeakMap<object, Set<string>>();

  /** The text that runs `statement` on `connection`, with the PREPARE it needs the first time. */
  render(connection: object, statement: SqlStatement, escape: EscapeLiteral): string {
    if (!statement.name || !this.enabled) return inlineParameters(statement, escape);
    let prepared = this.byConnection.get(connection);
    if (!prepared) {
      prepared = new Map();
      this.byConnection.set(connection, prepared);
    }
    const existing = prepared.get(statement.name);
    if (existing) return executeStatement(existing, statement.values, escape);
    const preparedName = `idempotency_${statement.name}_${randomBytes(4).toString('hex')}`;
    // Counted as prepared at once, but unconfirmed until its batch succeeds (`settle`).
    prepared.set(statement.name, preparedName);
    let pending = this.unconfirmed.get(connection);
    if (!pending) {
      pending = new Set();
      this.unconfirmed.set(connection, pending);
    }
    pending.add(statement.name);
    return `PREPARE ${preparedName} AS ${statement.text};\n${executeStatement(preparedName, statement.values, escape)}`;
  }

  /**
   * After a batch: `ran` says whether its PREPAREs ran (the batch succeeded, or failed after
   * them). When unknown they may not have (a statement before them failed, the transaction was
   * already aborted), so those names are prepared again, under new names, on next use: an
   * EXECUTE of a statement the session never got would fail every later request on this
   * connection.
   */
  settle(connection: object, ran: boolean): void {
    const pending = this.unconfirmed.get(connection);
    if (!pending || pending.size === 0) return;
    if (!ran) {
      const prepared = this.byConnection.get(connection);
      for (const name of pending) prepared?.delete(name);
    }
    pending.clear();
  }

  /**
   * False once statements kept vanishing: behind a pooler in transaction mode each transaction
   * may get another server session, so most would pay a refused EXECUTE and a new PREPARE, and
   * every session would keep each copy (tens of kB a statement) until the pooler closes it.
   */
  get enabled(): boolean {
    return this.vanished < GIVE_UP_AFTER_VANISHED;
  }

  /**
   * The connection's statements are gone (SQLSTATE 26000): prepare them anew on next use.
   * Returns true when this was the third loss: statements are sent whole from now on.
   */
  forget(connection: object): boolean {
    this.byConnection.delete(connection);
    this.unconfirmed.delete(connection);
    // Every loss counts, a connection's repeated ones too: behind a pooler in transaction mode
    // an app with one busy connection loses them again and again, and would otherwise pay a
    // refused EXECUTE on most requests for ever. (A handler that runs DEALLOCATE ALL again and
    // again turns preparing off too: it only costs the planning that preparing saves.)
    if (!this.enabled) return false;
    this.vanished++;
    return !this.enabled;
  }
}

/**
 * A connection keeps its server session unless something in between swaps it; `DISCARD ALL`
 * by the app is rare. Three losses mean a pooler in transaction mode, not an accident.
 */
const GIVE_UP_AFTER_VANISHED = 3; // losses, on any connections

/** SQLSTATE 26000 invalid_sql_statement_name: EXECUTE of a statement the session does not have. */
export const UNKNOWN_PREPARED_STATEMENT = '26000';
