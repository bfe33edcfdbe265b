import { type DynamicModule, Module } from '@nestjs/common';
import { OrdersController } from '../orders/orders.controller';
import { OrdersModule } from '../orders/orders.module';
import { BenchAllocationsController } from './bench-allocations.controller';
import { BenchBareController } from './bench-bare.controller';
import { BenchOrdersController } from './bench-orders.controller';
import { BenchStatsController } from './bench-stats.controller';
import { BenchStatsService } from './bench-stats.service';

/**
 * Routes for `npm run bench`, registered only with `BENCH_ROUTES=1`: the baseline twin of
 * `POST /v1/orders`, a bare route that touches nothing, the same create behind the peer library
 * (`bench/peer/`), the statement and request counts at `GET /bench/stats`, and V8's allocation
 * sampling at `POST /bench/allocations/start` and `/stop` (`npm run bench:profile -- --allocations`).
 */
@Module({
  imports: [OrdersModule],
  controllers: [
    BenchOrdersController,
    BenchBareController,
    BenchStatsController,
    BenchAllocationsController,
  ],
  // The orders controller as a plain provider: the twin calls its handler, not its route.
  providers: [OrdersController, BenchStatsService],
})
export class BenchModule {
  /** `peerRedisUrl`: `BENCH_REDIS_URL`, the Redis of the peer's second route (none without it). */
  static register(peerRedisUrl: string | undefined): DynamicModule {
    return {
      module: BenchModule,
      // Imported here, not at the top: only a demo with bench routes loads the peer library.
      imports: [
        import('./peer/peer-bench.module').then(({ PeerBenchModule }) =>
          PeerBenchModule.register(peerRedisUrl),
        ),
      ],
    };
  }
}
