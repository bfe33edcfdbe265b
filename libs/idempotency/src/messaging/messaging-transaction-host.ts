import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { lookUpTransactionHost } from '../shared/transaction-host.lookup';
import { MESSAGING_OPTIONS } from './messaging.constants';
import type { ResolvedMessagingOptions } from './messaging.defaults';

type TypeOrmHost = TransactionHost<TransactionalAdapterTypeOrm>;

/**
 * The `TransactionHost` of the messaging module's `transactionConnectionName`, with the parts of
 * its API the inbox and the outbox use: they take it where they would take the host itself.
 */
@Injectable()
export class MessagingTransactionHost implements OnModuleInit {
  private resolved?: TypeOrmHost;

  constructor(
    @Inject(MESSAGING_OPTIONS) private readonly options: ResolvedMessagingOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.host();
  }

  get tx(): TypeOrmHost['tx'] {
    return this.host().tx;
  }

  isTransactionActive(): boolean {
    return this.host().isTransactionActive();
  }

  readonly withTransaction: TypeOrmHost['withTransaction'] = ((...args: unknown[]) =>
    (this.host().withTransaction as (...all: unknown[]) => unknown)(
      ...args,
    )) as TypeOrmHost['withTransaction'];

  /** Found at start-up; a lifecycle hook that runs before ours finds it on first use. */
  private host(): TypeOrmHost {
    this.resolved ??= lookUpTransactionHost(
      this.moduleRef,
      this.options.transactionConnectionName,
      'IdempotencyMessagingModule',
    );
    return this.resolved;
  }
}
