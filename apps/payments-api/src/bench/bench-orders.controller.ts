import { Body, Controller, HttpCode, Post, Res, UseInterceptors } from '@nestjs/common';
import { Tenant } from '../auth/tenant.decorator';
import { CreateOrderDto } from '../orders/create-order.dto';
import type { OrderView } from '../orders/order.view';
import { OrdersController } from '../orders/orders.controller';
import { PassThroughInterceptor } from './pass-through.interceptor';

/**
 * `POST /bench/orders`, the benchmark's baseline: `POST /v1/orders` without `@Idempotent()`.
 * Same guard and tenants, same DTO and validation, same handler, same 201 and `Location`; the
 * difference between the two routes' figures is what idempotency costs, and nothing else.
 *
 * `POST /bench/orders/intercepted` is the same handler behind an interceptor that hands every
 * request on: what Nest itself charges for the interceptor that `@Idempotent()` is, so the
 * benchmark can tell that charge from the library's own work.
 */
@Controller('bench/orders')
export class BenchOrdersController {
  constructor(private readonly orders: OrdersController) {}

  @Post()
  @HttpCode(201)
  create(
    @Tenant() tenantId: string,
    @Body() dto: CreateOrderDto,
    @Res({ passthrough: true }) response: unknown,
  ): Promise<OrderView> {
    // A plain method call runs the handler alone: Nest applies a route's interceptors, and so
    // @Idempotent(), only when it routes a request to that route itself.
    return this.orders.create(tenantId, dto, response);
  }

  @Post('intercepted')
  @HttpCode(201)
  @UseInterceptors(PassThroughInterceptor)
  createIntercepted(
    @Tenant() tenantId: string,
    @Body() dto: CreateOrderDto,
    @Res({ passthrough: true }) response: unknown,
  ): Promise<OrderView> {
    return this.create(tenantId, dto, response);
  }
}
