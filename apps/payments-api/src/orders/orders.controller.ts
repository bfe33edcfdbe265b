import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse } from '@nestjs/swagger';
import { Idempotent } from 'nestjs-pg-idempotency';
import { ApiKeyRequired } from '../auth/api-key.docs';
import { Tenant } from '../auth/tenant.decorator';
import { OrderEvents } from '../events/order-events';
import { eventFaultHeaders } from '../faults/demo-faults';
import { DemoFault, WithDemoFaults } from '../faults/with-demo-faults.decorator';
import {
  WRITE_OUTSIDE_TRANSACTION,
  WriteOutsideTransactionFault,
} from '../faults/write-outside-transaction.fault';
import { CreateOrderDto } from './create-order.dto';
import { ORDER_VIEW_SCHEMA, toOrderView, type OrderView } from './order.view';
import { OrdersService } from './orders.service';
import { problemContent } from '../problems/problem.schema';

@Controller('v1/orders')
@ApiKeyRequired()
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly adapterHost: HttpAdapterHost,
    private readonly events: OrderEvents,
    private readonly faults: WriteOutsideTransactionFault,
  ) {}

  @Post()
  @HttpCode(201)
  @WithDemoFaults('delay', 'fail-transient', 'crash-after-commit')
  @Idempotent()
  @ApiCreatedResponse({
    description: 'The order; replays of its key answer these very bytes.',
    schema: ORDER_VIEW_SCHEMA,
    headers: {
      Location: { description: 'The order: /v1/orders/{id}', schema: { type: 'string' } },
    },
  })
  async create(
    @Tenant() tenantId: string,
    @Body() dto: CreateOrderDto,
    @Res({ passthrough: true }) response: unknown,
    @DemoFault() fault?: string,
  ): Promise<OrderView> {
    const order = await this.orders.create(tenantId, dto);
    // X-Demo-Fault: write-outside-transaction; checked here, so a request without it waits for nothing.
    if (fault === WRITE_OUTSIDE_TRANSACTION) await this.faults.saveCopy(order);
    // In the order's transaction: the event exists exactly when the order does.
    await this.events.created(order, eventFaultHeaders(fault));
    this.adapterHost.httpAdapter.setHeader(response, 'Location', `/v1/orders/${order.id}`);
    return toOrderView(order);
  }

  @Get()
  async list(@Tenant() tenantId: string): Promise<{ data: OrderView[] }> {
    return { data: (await this.orders.list(tenantId)).map(toOrderView) };
  }

  @Get(':id')
  @ApiOkResponse({ description: 'The order.', schema: ORDER_VIEW_SCHEMA })
  @ApiNotFoundResponse({
    description: 'No such order for this tenant (order_not_found).',
    content: problemContent(404),
  })
  async get(
    @Tenant() tenantId: string,
    @Param('id', new ParseUUIDPipe()) id: string,
  ): Promise<OrderView> {
    return toOrderView(await this.orders.get(tenantId, id));
  }
}
