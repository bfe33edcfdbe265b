import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type {
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

type Write = 'insert' | 'update' | 'remove' | 'soft remove' | 'recover';

/** What every `before*` event TypeORM broadcasts carries (the entity itself may be absent). */
interface WriteEvent {
  queryRunner: QueryRunner;
  metadata: EntityMetadata;
}

/**
 * The write guard: a TypeORM subscriber on the transactional DataSource. TypeORM broadcasts its
 * `before*` events from `save`/`remove`/`softRemove`/`recover` and from the query builders behind
 * `insert`/`update`/`delete`/`softDelete`/`restore`, before the statement is sent, with the query
 * runner that will send it. During an `@Idempotent()` handler, a write is allowed only through the
 * transaction the handler's async context holds (`txHost.tx`: the request's, or in phased mode
 * the current step's); any other query runner is the classic bug, a write that commits on its
 * own and that the retry repeats. The library's own statements are raw queries: never broadcast.
 */
@Injectable()
export class WriteGuardSubscriber
  implements EntitySubscriberInterface, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger('Idempotency');
  private dataSource?: DataSource;
  /** Scope and entity pairs already warned about: a warning per route and entity, not per write. */
  private readonly warned = new Set<string>();

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

  private check(event: WriteEvent, write: Write): void {
    const guard = GuardedRequest.current();
    if (!guard) return;
    // Without an active transaction `tx` is the DataSource's manager, whose query runner is
    // undefined: then every write is outside (phased mode, between steps).
    const transaction = this.transactions.host.tx;
    if (event.queryRunner === transaction.queryRunner) return;
    const entity = event.metadata.name;
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
