import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type {
  BeforeQueryEvent,
  DataSource,
  EntityMetadata,
  EntitySubscriberInterface,
  InsertEvent,
  QueryRunner,
  RecoverEvent,
  RemoveEvent,
  SoftRemoveEvent,
  UpdateEvent,
} from 'typeorm';
import { IdempotencyEvents } from '../events/idempotency-events';
import { TransactionHostRef } from '../transaction-host.ref';
import { GuardedRequest } from './guarded-request';
import { isSentByLibrary } from './library-statements';
import { type WrittenTable, writtenTable } from './written-table';

/** A read inside an entity write's operation (a tree reads its bounds) does not end it. */
const STARTS_WITH_SELECT = /^\s*select\b/i;

type Write = 'insert' | 'update' | 'remove' | 'soft remove' | 'recover' | WrittenTable['write'];

/** What every `before*` event TypeORM broadcasts carries (the entity itself may be absent). */
interface WriteEvent {
  queryRunner: QueryRunner;
  metadata: EntityMetadata;
}

/**
 * The write guard: a TypeORM subscriber on the transactional DataSource. During an
 * `@Idempotent()` handler, a write is allowed only through the transaction the handler's async
 * context holds (`txHost.tx`: the request's, or in phased mode the current step's); any other
 * query runner is the classic bug, a write that commits on its own and that the retry repeats.
 *
 * It hears writes twice over, both before the statement is sent, with the query runner that
 * will send it: the `before*` events TypeORM broadcasts from `save`/`remove`/`softRemove`/
 * `recover` and the query builders behind `insert`/`update`/`delete`/`softDelete`/`restore`
 * (they name the entity), and `beforeQuery`, for every statement, whose first words say what
 * raw SQL and the builders TypeORM does not broadcast for write (`INSERT … SELECT`, a table
 * named by a string). The library's own statements are its raw batches, or marked by their
 * parameter array (`libraryParameters`).
 */
@Injectable()
export class WriteGuardSubscriber
  implements EntitySubscriberInterface, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger('Idempotency');
  private dataSource?: DataSource;
  /** Scope and entity pairs already warned about: a warning per route and entity, not per write. */
  private readonly warned = new Set<string>();
  /**
   * The tables of the writes an entity event reported on each query runner ('warn' lets them
   * through): their statements follow (a tree's raw moves of its bounds too), and `beforeQuery`
   * must not count them again. Cleared at the end of the operation: the runner's next statement
   * that neither writes nor reads (the `COMMIT` of `save`'s own transaction).
   */
  private readonly reportedByEntity = new WeakMap<QueryRunner, Set<string>>();
  /** Entity names by table (`tablePath`, then bare `tableName`), for raw statements' reports. */
  private readonly entitiesByTable = new Map<string, string>();
  /** TypeORM's query cache writes its table on whichever runner read: a read, not the app's write. */
  private cacheTable?: string;

  constructor(
    private readonly transactions: TransactionHostRef,
    private readonly events: IdempotencyEvents,
  ) {}

  onApplicationBootstrap(): void {
    const dataSource = this.transactions.dataSource();
    if (!dataSource) {
      this.logger.warn('writeGuard: the transaction host has no TypeORM DataSource to watch');
      return;
    }
    if (!dataSource.subscribers.includes(this)) dataSource.subscribers.push(this);
    this.dataSource = dataSource;
    for (const { name, tableName, tablePath } of dataSource.entityMetadatas) {
      if (!this.entitiesByTable.has(tablePath)) this.entitiesByTable.set(tablePath, name);
      if (!this.entitiesByTable.has(tableName)) this.entitiesByTable.set(tableName, name);
    }
    const { cache } = dataSource.options;
    if (cache)
      this.cacheTable =
        (typeof cache === 'object' ? cache.tableName : undefined) || 'query-result-cache';
  }

  // A DataSource that outlives the app (tests that share one) must not keep a dead subscriber.
  onApplicationShutdown(): void {
    const subscribers = this.dataSource?.subscribers;
    const index = subscribers?.indexOf(this) ?? -1;
    if (subscribers && index >= 0) subscribers.splice(index, 1);
  }

  beforeInsert(event: InsertEvent<unknown>): void {
    this.check(event, 'insert');
  }

  beforeUpdate(event: UpdateEvent<unknown>): void {
    this.check(event, 'update');
  }

  beforeRemove(event: RemoveEvent<unknown>): void {
    this.check(event, 'remove');
  }

  beforeSoftRemove(event: SoftRemoveEvent<unknown>): void {
    this.check(event, 'soft remove');
  }

  beforeRecover(event: RecoverEvent<unknown>): void {
    this.check(event, 'recover');
  }

  beforeQuery(event: BeforeQueryEvent): void {
    const guard = GuardedRequest.current();
    if (!guard) return;
    const { queryRunner } = event;
    // The handler's own statements first: the common case, and cheaper than reading the text.
    if (queryRunner === this.transactions.host.tx.queryRunner) return;
    const written = writtenTable(event.query);
    if (!written) {
      if (!STARTS_WITH_SELECT.test(event.query)) this.reportedByEntity.delete(queryRunner);
      return;
    }
    if (
      this.reportedByEntity.get(queryRunner)?.has(written.table) ||
      isSentByLibrary(event.parameters)
    )
      return;
    if (written.table === this.cacheTable) return;
    const qualified =
      written.schema === undefined ? written.table : `${written.schema}.${written.table}`;
    const entity =
      this.entitiesByTable.get(qualified) ?? this.entitiesByTable.get(written.table) ?? qualified;
    this.report(guard, entity, written.write);
  }

  private check(event: WriteEvent, write: Write): void {
    const guard = GuardedRequest.current();
    if (!guard) return;
    // Without an active transaction `tx` is the DataSource's manager, whose query runner is
    // undefined: then every write is outside (phased mode, between steps).
    const transaction = this.transactions.host.tx;
    if (event.queryRunner === transaction.queryRunner) return;
    this.report(guard, event.metadata.name, write);
    // Let through: its statements follow, and `beforeQuery` must not count them again.
    if (event.queryRunner) {
      const tables = this.reportedByEntity.get(event.queryRunner) ?? new Set<string>();
      const { tableName, closureJunctionTable } = event.metadata;
      tables.add(tableName);
      if (closureJunctionTable) tables.add(closureJunctionTable.tableName);
      this.reportedByEntity.set(event.queryRunner, tables);
    }
  }

  /** Emits the event, then warns (and returns) or throws the refusal, as the guard says. */
  private report(guard: GuardedRequest, entity: string, write: Write): void {
    const { scope, mode } = guard;
    this.events.emit({ type: 'write_outside_transaction', scope, mode, entity });
    if (guard.action === 'warn') {
      const pair = `${scope}\u0000${entity}`;
      if (this.warned.has(pair)) return;
      this.warned.add(pair);
      this.logger.warn(
        `${scope}: ${write} of ${entity} outside the request's transaction; it commits even if ` +
          `the key is released, and a retry repeats it (writeGuard 'warn': let through)`,
      );
      return;
    }
    this.logger.error(
      `${scope}: ${write} of ${entity} outside the request's transaction refused ` +
        `(writeGuard 'throw'); the request fails and its key is released. Write through txHost.tx`,
    );
    throw guard.refuse(entity);
  }
}
