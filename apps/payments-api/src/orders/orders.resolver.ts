import { ConflictException, UnprocessableEntityException } from '@nestjs/common';
import { Args, Mutation, Query, Resolver } from '@nestjs/graphql';
import { GraphQLError } from 'graphql';
import { Idempotent } from 'nestjs-pg-idempotency';
import { Tenant } from '../auth/tenant.decorator';
import { OrderEvents } from '../events/order-events';
import { CreateOrderInput } from './create-order.input';
import { OrderModel } from './order.model';
import { toOrderView, type OrderView } from './order.view';
import { OrdersService } from './orders.service';

/**
 * `POST /graphql`: the orders of `POST /v1/orders`, through the same service, in the same
 * table, under the same idempotency key header. `createOrder` is one record per field.
 */
@Resolver(() => OrderModel)
export class OrdersResolver {
  constructor(
    private readonly service: OrdersService,
    private readonly events: OrderEvents,
  ) {}

  @Query(() => [OrderModel])
  async orders(@Tenant() tenantId: string): Promise<OrderView[]> {
    return (await this.service.list(tenantId)).map(toOrderView);
  }

  @Mutation(() => OrderModel)
  @Idempotent()
  async createOrder(
    @Tenant() tenantId: string,
    @Args('input') input: CreateOrderInput,
  ): Promise<OrderView> {
    try {
      const order = await this.service.create(tenantId, {
        ...input,
        currency: input.currency ?? 'usd',
      });
      await this.events.created(order);
      return toOrderView(order);
    } catch (error) {
      throw asGraphQLError(error);
    }
  }
}

/**
 * The service's refusals as the GraphQL errors clients match on:
 * - the credit limit's: it carries a code, so the library stores it: every replay of the key
 *   answers it again, and no order exists;
 * - a reference the tenant used already: as on `POST /v1/orders`, a 409 the library does not
 *   store (`extensions.http.status`), so the key is free again.
 */
function asGraphQLError(error: unknown): unknown {
  if (!(error instanceof UnprocessableEntityException || error instanceof ConflictException)) {
    return error;
  }
  const { code, detail } = error.getResponse() as { code?: unknown; detail: string };
  if (code === 'insufficient_funds') {
    return new GraphQLError(detail, { extensions: { code: 'INSUFFICIENT_FUNDS' } });
  }
  if (code === 'duplicate_reference') {
    return new GraphQLError(detail, {
      extensions: { code: 'DUPLICATE_REFERENCE', http: { status: 409 } },
    });
  }
  return error;
}
