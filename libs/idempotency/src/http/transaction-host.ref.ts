import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsServiceManager } from 'nestjs-cls';
import type { DataSource, EntityManager } from 'typeorm';
import type { IsolationLevel } from './atomic/batched-transaction';
import { IDEMPOTENCY_OPTIONS } from './idempotency.constants';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';
import { runThen } from '../shared/run-then';
import { lookUpTransactionHost } from '../shared/transaction-host.lookup';

/** The app's `TransactionHost` for `transactionConnectionName`, found at start-up. */
@Injectable()
export class TransactionHostRef implements OnModuleInit {
  private resolved?: TransactionHost<TransactionalAdapterTypeOrm>;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.resolved = lookUpTransactionHost(
      this.moduleRef,
      this.options.transactionConnectionName,
      'IdempotencyModule',
    );
  }

  get host(): TransactionHost<TransactionalAdapterTypeOrm> {
    if (!this.resolved) throw new Error('IdempotencyModule is not initialised yet');
    return this.resolved;
  }

  /** The DataSource the host opens its transactions on (its manager outside a transaction). */
  dataSource(): DataSource | undefined {
    const manager = this.host.tx as EntityManager | undefined;
    return manager?.connection;
  }

  /**
   * Whether the library may open a transaction itself (`BatchedTransaction`) and hand it to
   * the host, and with what: undefined when a transaction is already active (the request joins
   * it), when the host was given default transaction options (`withTransaction` applies them),
   * or when this version of @nestjs-cls/transactional cannot adopt a transaction.
   */
  ownTransaction(): { dataSource: DataSource; isolationLevel?: IsolationLevel } | undefined {
    const host = this.host as unknown as AdoptingHost;
    if (typeof host.setTxInstance !== 'function' || host.isTransactionActive()) return undefined;
    const defaults = host._options?.defaultTxOptions;
    if (defaults && Object.keys(defaults).length > 0) return undefined;
    const manager = this.host.tx as EntityManager | undefined;
    const dataSource = manager?.connection;
    if (!dataSource || dataSource.options.type !== 'postgres') return undefined;
    // The batched START and COMMIT inline their values with node-postgres's JavaScript client's
    // escaping; pg-native has none, so it keeps the one-statement-at-a-time path.
    if ((dataSource.options as { native?: boolean }).native) return undefined;
    const isolationLevel = (dataSource.options as { isolationLevel?: IsolationLevel })
      .isolationLevel;
    return { dataSource, isolationLevel };
  }

  /**
   * Runs `work` with `manager` as the host's transaction, in a child async context, as
   * `withTransaction` does with the transactions it opens: `txHost.tx` (and an injected
   * transaction proxy) give the handler this manager, and nothing leaks to the caller.
   * @nestjs-cls/transactional has no public way to adopt a transaction opened elsewhere; its
   * own `setTxInstance` is what `withTransaction` calls, and `ownTransaction()` checks for it.
   */
  runWith<T>(manager: EntityManager, work: () => Promise<T>): Promise<T> {
    const host = this.host as unknown as AdoptingHost;
    return ClsServiceManager.getClsService().run({ ifNested: 'inherit' }, () => {
      host.setTxInstance(manager);
      return runThen(work, () => host.setTxInstance(undefined));
    });
  }
}

/** What `ownTransaction` and `runWith` use of a TransactionHost beyond its typed API. */
interface AdoptingHost {
  setTxInstance(instance: EntityManager | undefined): void;
  isTransactionActive(): boolean;
  _options?: { defaultTxOptions?: Record<string, unknown> };
}
