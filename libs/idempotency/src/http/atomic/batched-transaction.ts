import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { sqlState } from '../../shared/postgres-errors';
import { type EscapeLiteral, inlineParameters, type SqlStatement } from '../../shared/sql-literals';
import type { CoalescedWrites, CorkableStream } from './coalesced-writes';
import { type PreparedStatements, UNKNOWN_PREPARED_STATEMENT } from './prepared-statements';

/** The part of a node-postgres client this class uses (what TypeORM's `connect()` returns). */
interface PostgresClient {
  query(text: string): Promise<PostgresResult | PostgresResult[]>;
  escapeLiteral: EscapeLiteral;
  /** node-postgres's connection, and its socket (not documented API: used when present). */
  connection?: { stream?: CorkableStream };
}

interface PostgresResult {
  command: string | null;
  rows: unknown[];
}

// Debug only: behind a pooler in transaction mode this line comes with most requests.
const logger = new Logger('Idempotency');

export type IsolationLevel =
  'READ UNCOMMITTED' | 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';

const ISOLATION_LEVELS: ReadonlySet<string> = new Set<IsolationLevel>([
  'READ UNCOMMITTED',
  'READ COMMITTED',
  'REPEATABLE READ',
  'SERIALIZABLE',
]);

/** What `BatchedTransaction.run` sends with START TRANSACTION. */
export interface StartOptions {
  isolationLevel?: IsolationLevel;
  /** Where named statements are prepared per connection; without it every statement is sent whole. */
  prepared?: PreparedStatements;
  /** Where this transaction's writes wait for the end of the turn; without it they go at once. */
  coalescedWrites?: CoalescedWrites;
  afterStart: readonly SqlStatement[];
  /** What an error of the START batch means to the caller (e.g. the claim's lock timeout). */
  startFailure?: (error: unknown) => unknown;
}

/** Statements for one round trip, and what their error means to the caller. */
interface Batch {
  statements: readonly SqlStatement[];
  failure: (error: unknown) => unknown;
}

/**
 * A TypeORM transaction on a query runner of its own, whose START TRANSACTION carries the
 * statements that follow it and whose COMMIT carries the statements that precede it: each
 * pair is one simple-protocol query, so one round trip. An idempotent create then costs the
 * round trips of the same handler without idempotency (START, the handler's writes, COMMIT)
 * instead of three more.
 *
 * Where a subscriber of the data source listens to transaction events, TypeORM runs the
 * transaction: `startTransaction` and `commitTransaction` keep its state, nesting (savepoints)
 * and events as usual; only the text of its own START and COMMIT grows, on this one query
 * runner. Where none does (the usual case), this class sends START and COMMIT itself and keeps
 * the query runner's state as TypeORM would: a nested transaction in the handler still takes a
 * savepoint. That spares four event broadcasts nobody hears, about twenty promises per create,
 * each of which an app with an AsyncLocalStorage (nestjs-cls) pays a promise hook for on Node 20.
 */
export class BatchedTransaction {
  private afterStart?: Batch;
  private beforeCommit?: Batch;
  private nothingToKeep = false;
  private isolationLevelSent = false;
  private started: unknown[][] = [];

  private constructor(
    private readonly queryRunner: QueryRunner,
    private readonly isolationLevel: IsolationLevel | undefined,
    private readonly prepared: PreparedStatements | undefined,
    private readonly coalescedWrites: CoalescedWrites | undefined,
  ) {}

  /** The manager the handler's writes must use: `txHost.tx` while `work` runs. */
  get manager(): EntityManager {
    return this.queryRunner.manager;
  }

  /**
   * Opens the transaction with `afterStart` in its first round trip and hands `work` the rows
   * of those of its statements that return rows, in order. Commits when `work` resolves, with what it passed to
   * `commitWith`; rolls back when anything throws, and always releases the connection.
   */
  static async run<T>(
    dataSource: DataSource,
    start: StartOptions,
    work: (transaction: BatchedTransaction, startedRows: unknown[][]) => Promise<T>,
  ): Promise<T> {
    const { isolationLevel } = start;
    if (isolationLevel !== undefined && !ISOLATION_LEVELS.has(isolationLevel)) {
      throw new Error(`unknown isolation level "${isolationLevel}"`);
    }
    const queryRunner = dataSource.createQueryRunner();
    const transaction = new BatchedTransaction(
      queryRunner,
      isolationLevel,
      start.prepared,
      start.coalescedWrites,
    );
    // Without a subscriber to tell, the transaction is opened and committed here, as TypeORM
    // would do it, but without the four event broadcasts nobody hears (see `TransactionState`).
    const quiet = !hearsTransactionEvents(dataSource);
    let releasedLater = false;
    // Set when the connection may still be inside a transaction: it must not go back to the pool.
    let unusable: unknown;
    let client: PostgresClient | undefined;
    try {
      client = (await queryRunner.connect()) as PostgresClient;
      transaction.intercept(client);
      const afterStart: Batch = {
        statements: start.afterStart,
        failure: start.startFailure ?? ((error) => error),
      };
      if (quiet) {
        // As TypeORM does: active from before START, so a failed START batch is rolled back.
        transactionState(queryRunner).isTransactionActive = true;
        transaction.coalescedWrites?.hold(client.connection?.stream);
        await transaction.start(client, afterStart);
        transactionState(queryRunner).transactionDepth = 1;
      } else {
        transaction.afterStart = afterStart;
        await queryRunner.startTransaction(isolationLevel);
      }
      const result = await work(transaction, transaction.started);
      if (transaction.nothingToKeep) {
        // Sent, not awaited: the caller answers now, and the connection goes back to the pool
        // once the ROLLBACK is through (node-postgres runs a client's queries in order).
        releasedLater = true;
        void (quiet ? transaction.rollBackQuietly(client) : queryRunner.rollbackTransaction())
          .then(
            () => release(queryRunner),
            (error: unknown) => {
              logger.warn(`ROLLBACK failed: ${String(error)}`);
              return release(queryRunner, error);
            },
          )
          .catch((error: unknown) =>
            logger.warn(`releasing the connection failed: ${String(error)}`),
          );
        return result;
      }
      if (quiet) {
        await transaction.commitQuietly(client);
        ended(queryRunner);
      } else {
        // TypeORM commits one level: under a savepoint the work left open it would send RELEASE
        // SAVEPOINT, without the record, and leave the transaction open. COMMIT ends them all.
        transactionState(queryRunner).transactionDepth = 1;
        await queryRunner.commitTransaction();
      }
      return result;
    } catch (error) {
      // Also after a failed START batch or COMMIT batch: the transaction is open but aborted.
      if (queryRunner.isTransactionActive) {
        await rollBackEverything(queryRunner, client).catch((rollbackError: unknown) => {
          unusable = rollbackError;
        });
      }
      throw error;
    } finally {
      if (!releasedLater) await release(queryRunner, unusable);
    }
  }

  /**
   * Says that nothing this transaction did needs to last (a claim that found its key's
   * outcome already committed): it ends with a ROLLBACK the caller does not wait for, so the
   * answer costs the START batch's round trip alone.
   */
  endWithoutWaiting(): void {
    this.nothingToKeep = true;
  }

  /**
   * Statements to run just before COMMIT, in its round trip; they must succeed for it to
   * commit. `failure` says what their error means to the caller.
   */
  commitWith(
    statements: readonly SqlStatement[],
    failure: (error: unknown) => unknown = (error) => error,
  ): void {
    this.beforeCommit = { statements, failure };
  }

  /**
   * Wraps this query runner's `query`: TypeORM sends START TRANSACTION, SET TRANSACTION
   * ISOLATION LEVEL and COMMIT through it, and they are the three texts rewritten here. The
   * handler's own queries pass straight through, without a promise of this wrapper's. Every
   * query, the handler's too, waits for the end of the turn when `coalescedWrites` is given.
   */
  private intercept(client: PostgresClient): void {
    const queryRunner = this.queryRunner;
    const writes = this.coalescedWrites;
    const stream = client.connection?.stream;
    const original = queryRunner.query.bind(queryRunner) as (
      text: string,
      parameters?: unknown[],
      structured?: boolean,
    ) => Promise<unknown>;
    queryRunner.query = ((text: string, parameters?: unknown[], structured?: boolean) => {
      writes?.hold(stream);
      if (text === 'START TRANSACTION' && this.afterStart !== undefined) {
        return this.start(client, this.afterStart);
      }
      // Already part of START TRANSACTION: after the claim, PostgreSQL would refuse it.
      if (this.isolationLevelSent && text.startsWith('SET TRANSACTION ISOLATION LEVEL')) {
        this.isolationLevelSent = false;
        return Promise.resolve([]);
      }
      if (text === 'COMMIT' && this.beforeCommit !== undefined) {
        return this.commit(client, this.beforeCommit);
      }
      return original(text, parameters, structured);
    }) as QueryRunner['query'];
  }

  /** ROLLBACK past TypeORM, leaving its query runner as its `rollbackTransaction` would. */
  private async rollBackQuietly(client: PostgresClient): Promise<void> {
    this.coalescedWrites?.hold(client.connection?.stream);
    await client.query('ROLLBACK');
    ended(this.queryRunner);
  }

  /** COMMIT with the statements `commitWith` gave, in one round trip, past TypeORM. */
  private commitQuietly(client: PostgresClient): Promise<unknown> {
    this.coalescedWrites?.hold(client.connection?.stream);
    return this.beforeCommit ? this.commit(client, this.beforeCommit) : client.query('COMMIT');
  }

  /** START TRANSACTION with the statements that follow it, in one round trip. */
  private start(client: PostgresClient, { statements, failure }: Batch): Promise<never[]> {
    const level = this.isolationLevel ? ` ISOLATION LEVEL ${this.isolationLevel}` : '';
    this.afterStart = undefined;
    this.isolationLevelSent = level !== '';
    // Rendered at each attempt: after a loss, the statements are prepared again.
    const send = () =>
      this.sendBatch(client, `START TRANSACTION${level};\n${this.render(client, statements)}`);
    const sent = this.prepared
      ? send().catch(async (error: unknown) => {
          if (sqlState(error) !== UNKNOWN_PREPARED_STATEMENT) throw error;
          // The session lost its prepared statements (DISCARD ALL, a pooler's other session):
          // nothing ran yet, so start over and prepare them again.
          this.forgetPrepared(client);
          logger.debug(
            'prepared statements missing on this connection (SQLSTATE 26000: DISCARD ALL, or a pooler in ' +
              'transaction mode, where preparedStatements: false saves this retry): preparing them again',
          );
          await client.query('ROLLBACK');
          return send();
        })
      : send();
    return sent.then(
      (results) => {
        // START TRANSACTION's own result, and each PREPARE's, carry no rows.
        for (const rows of rowsOf(results)) if (rows !== undefined) this.started.push(rows);
        return [];
      },
      (error: unknown) => {
        throw failure(error);
      },
    );
  }

  /** The statements that precede COMMIT, and COMMIT, in one round trip. */
  private commit(client: PostgresClient, { statements, failure }: Batch): Promise<never[]> {
    this.beforeCommit = undefined;
    return this.sendBatch(client, `${this.render(client, statements)};\nCOMMIT`).then(
      () => [],
      (error: unknown) => {
        // The handler dropped the session's statements (DEALLOCATE, DISCARD): this request
        // fails, the next one on this connection prepares them again.
        if (sqlState(error) === UNKNOWN_PREPARED_STATEMENT) this.forgetPrepared(client);
        throw failure(error);
      },
    );
  }

  /** The connection lost its statements; the third such loss turns preparing off, said once. */
  private forgetPrepared(client: PostgresClient): void {
    if (!this.prepared?.forget(client)) return;
    logger.warn(
      'prepared statements went missing 3 times (SQLSTATE 26000): the server sessions change under ' +
        'the pool, as behind PgBouncer in transaction mode. Sending the statements whole from now on; set ' +
        'preparedStatements: false to skip this detection.',
    );
  }

  /** Sends one batch; tells `prepared` whether the PREPAREs rendered into it ran. */
  private sendBatch(
    client: PostgresClient,
    text: string,
  ): Promise<PostgresResult | PostgresResult[]> {
    const sent = client.query(text);
    const prepared = this.prepared;
    if (!prepared) return sent;
    return sent.then(
      (results) => {
        prepared.settle(client, true);
        return results;
      },
      (error: unknown) => {
        prepared.settle(client, failedAfterPrepares(error));
        throw error;
      },
    );
  }

  /** Statements as one simple-protocol text: named ones as EXECUTE when `prepared` is on. */
  private render(client: PostgresClient, statements: readonly SqlStatement[]): string {
    const escape: EscapeLiteral = (value) => client.escapeLiteral(value);
    return statements
      .map((statement) =>
        this.prepared
          ? this.prepared.render(client, statement, escape)
          : inlineParameters(statement, escape),
      )
      .join(';\n');
  }
}

/**
 * The state TypeORM's `startTransaction` and `commitTransaction` keep on a query runner:
 * `isTransactionActive` (public) and the nesting depth (protected), which a nested
 * `withTransaction` in the handler reads to take a SAVEPOINT instead of a START.
 */
interface TransactionState {
  isTransactionActive: boolean;
  transactionDepth: number;
}

function transactionState(queryRunner: QueryRunner): TransactionState {
  return queryRunner as unknown as TransactionState;
}

/**
 * Ends the transaction at every depth: TypeORM's `rollbackTransaction` undoes one level, so a
 * savepoint the handler opened and never closed (a query runner's nested `startTransaction`)
 * would leave the transaction itself open. A plain ROLLBACK ends all of it.
 */
async function rollBackEverything(
  queryRunner: QueryRunner,
  client: PostgresClient | undefined,
): Promise<void> {
  if (transactionState(queryRunner).transactionDepth <= 1 || !client) {
    await queryRunner.rollbackTransaction();
    return;
  }
  await client.query('ROLLBACK');
  ended(queryRunner);
}

/**
 * Gives the connection back to the pool, or, when `unusable` says it may still be inside a
 * transaction (its ROLLBACK failed), has the pool close it: TypeORM passes the error on to
 * node-postgres's `release`, which destroys a client released with one.
 */
function release(queryRunner: QueryRunner, unusable?: unknown): Promise<void> {
  // Not async: the usual release costs a create no promise of this function's own.
  const destroyable = queryRunner as unknown as {
    releasePostgresConnection?: (error?: unknown) => Promise<void>;
  };
  if (unusable === undefined || typeof destroyable.releasePostgresConnection !== 'function') {
    return queryRunner.release();
  }
  return destroyable.releasePostgresConnection(
    unusable instanceof Error ? unusable : new Error('ROLLBACK failed', { cause: unusable }),
  );
}

/** The query runner's state after its COMMIT or ROLLBACK. */
function ended(queryRunner: QueryRunner): void {
  const state = transactionState(queryRunner);
  state.isTransactionActive = false;
  state.transactionDepth = 0;
}

const TRANSACTION_EVENTS = [
  'beforeTransactionStart',
  'afterTransactionStart',
  'beforeTransactionCommit',
  'afterTransactionCommit',
  'beforeTransactionRollback',
  'afterTransactionRollback',
] as const;

/** Whether a subscriber of `dataSource` listens to transaction events (its own or any entity's). */
function hearsTransactionEvents(dataSource: DataSource): boolean {
  return dataSource.subscribers.some((subscriber) =>
    TRANSACTION_EVENTS.some((event) => typeof subscriber[event] === 'function'),
  );
}

/**
 * Whether a batch's error came after its PREPAREs ran. They open their batch (after START
 * TRANSACTION alone), so any error comes after them but one a PREPARE raises itself: class 42
 * (its text, or a table it names), 25P02 (the transaction was already aborted: a COMMIT batch
 * after a failure the handler swallowed) or a lost session, whose statements are gone with it.
 * Counting the rest as not run (the claim cancelled by the app's `statement_timeout` while it
 * waited on a twin, say) would prepare them again under new names, and the session would keep
 * every copy.
 */
function failedAfterPrepares(error: unknown): boolean {
  const state = sqlState(error);
  if (state === undefined || state.startsWith('08') || state.startsWith('42')) return false;
  return state !== '25P02' && state !== UNKNOWN_PREPARED_STATEMENT;
}

/** The rows of each statement that returns rows (SELECT, EXECUTE of one); undefined for the rest. */
function rowsOf(result: PostgresResult | PostgresResult[]): (unknown[] | undefined)[] {
  return (Array.isArray(result) ? result : [result]).map((each) =>
    each.command === 'SELECT' ? each.rows : undefined,
  );
}
