import { type DynamicModule, Inject, Module, type OnModuleDestroy, Optional } from '@nestjs/common';
import { buildStorageAdapter, StorageAdapterEnum } from '@node-idempotency/nestjs';
import { OrdersController } from '../../orders/orders.controller';
import { OrdersModule } from '../../orders/orders.module';
import {
  PEER_MEMORY_STORAGE,
  PEER_OPTIONS,
  PEER_REDIS_STORAGE,
  PeerMemoryInterceptor,
  PeerRedisInterceptor,
  type PeerStorage,
} from './peer-interceptors';
import { PeerMemoryOrdersController, PeerRedisOrdersController } from './peer-orders.controller';

/**
 * The routes that run the demo's create behind `@node-idempotency/nestjs`, the peer of the
 * benchmark: in memory always, on Redis when `redisUrl` is given. Loaded only with
 * `BENCH_ROUTES=1`, so that the demo never loads the peer (nor its Redis client) otherwise.
 */
@Module({})
export class PeerBenchModule implements OnModuleDestroy {
  constructor(@Optional() @Inject(PEER_REDIS_STORAGE) private readonly redis?: PeerStorage) {}

  static register(redisUrl: string | undefined): DynamicModule {
    return {
      module: PeerBenchModule,
      imports: [OrdersModule],
      controllers: [PeerMemoryOrdersController, ...(redisUrl ? [PeerRedisOrdersController] : [])],
      providers: [
        // The orders controller as a plain provider: these routes call its handler.
        OrdersController,
        { provide: PEER_OPTIONS, useValue: {} },
        {
          provide: PEER_MEMORY_STORAGE,
          useFactory: () => buildStorageAdapter({ adapter: StorageAdapterEnum.memory }),
        },
        PeerMemoryInterceptor,
        ...(redisUrl
          ? [
              {
                provide: PEER_REDIS_STORAGE,
                // Connects before the app listens: an unreachable Redis stops the start.
                useFactory: () =>
                  buildStorageAdapter({
                    adapter: StorageAdapterEnum.redis,
                    options: { url: redisUrl },
                  }),
              },
              PeerRedisInterceptor,
            ]
          : []),
      ],
    };
  }

  async onModuleDestroy(): Promise<void> {
    await this.redis?.disconnect?.();
  }
}
