import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { Tenant } from '../auth/tenant.decorator';
import { CreateOrderDto } from '../orders/create-order.dto';
import type { OrderView } from '../orders/order.view';
import { OrdersController } from '../orders/orders.controller';

/**
 * `POST /bench/orders`, the benchmark's baseline: `POST /v1/orders` without `@Idempotent()`.
 * Same guard and tenants, same DTO and validation, same handler, same 201 and `Location`; the
 * difference between the two routes' figures is what idempotency costs, and nothing else.
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
}
