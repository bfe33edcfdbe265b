import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { from, lastValueFrom } from 'rxjs';

/** A user's own transaction around every request, opened before the idempotency interceptor. */
export class TransactionPerRequest implements NestInterceptor {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  intercept(_context: ExecutionContext, next: CallHandler) {
    return from(
      this.txHost.withTransaction(() => lastValueFrom(next.handle(), { defaultValue: undefined })),
    );
  }
}
