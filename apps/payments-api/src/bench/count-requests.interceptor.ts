import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { finalize, type Observable } from 'rxjs';
import { OrdersController } from '../orders/orders.controller';
import { BenchBareController } from './bench-bare.controller';
import { BenchOrdersController } from './bench-orders.controller';
import { BenchStatsService } from './bench-stats.service';

// Compared by identity with the route's handler, never called from here.
const BENCHMARKED_HANDLERS: readonly unknown[] = [
  // eslint-disable-next-line @typescript-eslint/unbound-method -- an identity, not a call
  OrdersController.prototype.create,
  // eslint-disable-next-line @typescript-eslint/unbound-method -- an identity, not a call
  BenchOrdersController.prototype.create,
  // eslint-disable-next-line @typescript-eslint/unbound-method -- an identity, not a call
  BenchBareController.prototype.create,
];

/**
 * Counts the requests of the benchmarked routes and those still running. Global, so it wraps the
 * route's own interceptors: a request ends here once its handler and its idempotency work are
 * done, even when the client hung up earlier (autocannon does, at the end of a run). The
 * benchmark waits for none to be left running before it reads a run's statement count.
 */
@Injectable()
export class CountRequestsInterceptor implements NestInterceptor {
  constructor(private readonly stats: BenchStatsService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (!BENCHMARKED_HANDLERS.includes(context.getHandler())) return next.handle();
    this.stats.requestStarted();
    return next.handle().pipe(finalize(() => this.stats.requestEnded()));
  }
}
