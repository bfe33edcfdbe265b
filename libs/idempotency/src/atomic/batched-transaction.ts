import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { type EscapeLiteral, joinStatements, type SqlStatement } from '../sql-literals';

/** The part of a node-postgres client this class uses (what TypeORM's `connect()` returns). */
interface PostgresClient {
  query(text: string): Promise<PostgresResult | PostgresResult[]>;
  escapeLiteral: EscapeLiteral;
}

interface PostgresResult {
  rows: unknown[];
}

export type IsolationLevel = 'READ UNCOMMITTED' | 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';

const ISOLATION_LEVELS: ReadonlySet<string> = new Set<IsolationLevel>([
  'READ UNCOMMITTED',
  'READ COMMITTED',
  'REPEATABLE READ',
  'SERIALIZABLE',
]);

/** What `BatchedTransaction.run` sends with START TRANSACTION. */
export interface StartOptions {
  isolationLevel?: IsolationLevel;
  afterStart: readonly SqlStatement[];
  /** What an error of the START batch means to the caller (e.g. the claim's lock timeout). */
  startFailure?: (error: unknown) => unknown;
}

/** Statements inlined into one text, and what their error means to the caller. */
interface Batch {
  text: string;
  failure: (error: unknown) => unknown;
}

/**
 * A TypeORM transaction on a query runner of its own, whose START TRANSACTION carries the
 * statements that follow it and whose COMMIT carries the statements that precede it: each
 * pair is one simple-protocol query, so one round trip. An idempotent create then costs the
 * round trips of the same handler without idempotency (START, the handler's writes, COMMIT)
 * instead of three more.
 *
 * TypeORM still runs the transaction: `startTransaction` and `commitTransaction` keep its
 * state, nesting (savepoints) and subscriber events as usual; only the text of its own START
 * and COMMIT grows, on this one query runner.
 */
export class BatchedTransaction {
  private afterStart?: Batch;
  private beforeCommit?: Batch;
  private isolationLevelSent = false;
  private started: unknown[][] = [];
  private client?: PostgresClient;

  private constructor(
    private readonly queryRunner: QueryRunner,
    private readonly isolationLevel: IsolationLevel | undefined,
  ) {}

  /** The manager the handler's writes must use: `txHost.tx` while `work` runs. */
  get manager(): EntityManager {
    return this.queryRunner.manager;
  }

  /**
   * Opens the transaction with `afterStart` in its first round trip and hands `work` their
   * rows (one array per statement). Commits when `work` resolves, with what it passed to
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
    const transaction = new BatchedTransaction(queryRunner, isolationLevel);
    try {
      const client = (await queryRunner.connect()) as PostgresClient;
      transaction.intercept(client);
      transaction.afterStart = {
        text: joinStatements(start.afterStart, (value) => client.escapeLiteral(value)),
        failure: start.startFailure ?? ((error) => error),
      };
      await queryRunner.startTransaction(isolationLevel);
      const result = await work(transaction, transaction.started);
      await queryRunner.commitTransaction();
      return result;
    } catch (error) {
      // Also after a failed START batch or COMMIT batch: the transaction is open but aborted.
      if (queryRunner.isTransactionActive) await queryRunner.rollbackTransaction().catch(() => undefined);
      throw error;
    } finally {
      await queryRunner.release();
    }
  }

  /**
   * Statements to run just before COMMIT, in its round trip; they must succeed for it to
   * commit. `failure` says what their error means to the caller.
   */
  commitWith(statements: readonly SqlStatement[], failure: (error: unknown) => unknown = (error) => error): void {
    const client = this.client;
    if (!client) throw new Error('transaction is not open');
    this.beforeCommit = { text: joinStatements(statements, (value) => client.escapeLiteral(value)), failure };
  }

  /**
   * Wraps this query runner's `query`: TypeORM sends START TRANSACTION, SET TRANSACTION
   * ISOLATION LEVEL and COMMIT through it, and they are the three texts rewritten here.
   */
  private intercept(client: PostgresClient): void {
    this.client = client;
    const queryRunner = this.queryRunner;
    const original = queryRunner.query.bind(queryRunner) as (
      text: string,
      parameters?: unknown[],
      structured?: boolean,
    ) => Promise<unknown>;
    queryRunner.query = (async (text: string, parameters?: unknown[], structured?: boolean) => {
      if (text === 'START TRANSACTION' && this.afterStart !== undefined) {
        const { text: afterStart, failure } = this.afterStart;
        const level = this.isolationLevel ? ` ISOLATION LEVEL ${this.isolationLevel}` : '';
        this.afterStart = undefined;
        this.isolationLevelSent = level !== '';
        const results = await client.query(`START TRANSACTION${level};\n${afterStart}`).catch((error: unknown) => {
          throw failure(error);
        });
        // The first result is START TRANSACTION's own.
        this.started.push(...rowsOf(results).slice(1));
        return [];
      }
      // Already part of START TRANSACTION: after the claim, PostgreSQL would refuse it.
      if (this.isolationLevelSent && text.startsWith('SET TRANSACTION ISOLATION LEVEL')) {
        this.isolationLevelSent = false;
        return [];
      }
      if (text === 'COMMIT' && this.beforeCommit !== undefined) {
        const { text: beforeCommit, failure } = this.beforeCommit;
        this.beforeCommit = undefined;
        await client.query(`${beforeCommit};\nCOMMIT`).catch((error: unknown) => {
          throw failure(error);
        });
        return [];
      }
      return original(text, parameters, structured);
    }) as QueryRunner['query'];
  }
}

function rowsOf(result: PostgresResult | PostgresResult[]): unknown[][] {
  return (Array.isArray(result) ? result : [result]).map((each) => each.rows);
}
