import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getTransactionHostToken, type TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { IDEMPOTENCY_OPTIONS } from './idempotency.constants';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';

/**
 * The app's `TransactionHost` for the configured connection. Looked up once every provider
 * exists (`onModuleInit`): the connection name is only known from the options, so it cannot be
 * a constructor dependency, and an earlier lookup would get an instance not yet constructed.
 */
@Injectable()
export class TransactionHostRef implements OnModuleInit {
  private resolved?: TransactionHost<TransactionalAdapterTypeOrm>;

  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    const name = this.options.transactionConnectionName;
    try {
      this.resolved = this.moduleRef.get(getTransactionHostToken(name), { strict: false });
    } catch {
      throw new Error(
        'IdempotencyModule needs a TransactionHost: register ClsModule with ClsPluginTransactional ' +
          `and the TypeORM adapter${name ? ` for connection "${name}"` : ''} (see the README).`,
      );
    }
  }

  get host(): TransactionHost<TransactionalAdapterTypeOrm> {
    if (!this.resolved) throw new Error('IdempotencyModule is not initialised yet');
    return this.resolved;
  }
}
