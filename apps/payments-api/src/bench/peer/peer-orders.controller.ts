import { Body, Controller, HttpCode, Post, Res, type Type, UseInterceptors } from '@nestjs/common';
import { Tenant } from '../../auth/tenant.decorator';
import { CreateOrderDto } from '../../orders/create-order.dto';
import type { OrderView } from '../../orders/order.view';
import { OrdersController } from '../../orders/orders.controller';
import { PeerMemoryInterceptor, PeerRedisInterceptor } from './peer-interceptors';

/**
 * `POST <path>`: the handler of `POST /v1/orders` behind `@node-idempotency/nestjs` (the given
 * interceptor) instead of `@Idempotent()`. Same guard, validation, handler and process, so the
 * two libraries are compared and nothing else.
 *
 * The peer's records live outside the handler's transaction and its keys are not scoped by
 * tenant: a create and its record are not atomic, which is what this library adds.
 */
function peerOrdersController(path: string, interceptor: Type<unknown>): Type<unknown> {
  @Controller(path)
  class PeerOrdersController {
    constructor(private readonly orders: OrdersController) {}

    @Post()
    @HttpCode(201)
    @UseInterceptors(interceptor)
    create(
      @Tenant() tenantId: string,
      @Body() dto: CreateOrderDto,
      @Res({ passthrough: true }) response: unknown,
    ): Promise<OrderView> {
      return this.orders.create(tenantId, dto, response);
    }
  }
  return PeerOrdersController;
}

/** `POST /bench/peer/memory/orders`: the peer's records in memory. */
export const PeerMemoryOrdersController = peerOrdersController(
  'bench/peer/memory/orders',
  PeerMemoryInterceptor,
);

/** `POST /bench/peer/redis/orders`: the peer's records on Redis (`BENCH_REDIS_URL`). */
export const PeerRedisOrdersController = peerOrdersController(
  'bench/peer/redis/orders',
  PeerRedisInterceptor,
);
