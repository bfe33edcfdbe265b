import {
  ConflictException,
  Injectable,
  NotFoundException,
  UnprocessableEntityException,
} from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { QueryFailedError } from 'typeorm';
import type { CreateOrderDto } from './create-order.dto';
import { Order } from './order.entity';

/** The demo's credit limit: larger orders are declined, deterministically. */
export const CREDIT_LIMIT_CENTS = 1_000_000;

const UNIQUE_VIOLATION = '23505';

@Injectable()
export class OrdersService {
  // Every write goes through txHost.tx: inside an @Idempotent() route that is the
  // transaction holding the claim, so the order and the recorded response commit together.
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get orders() {
    return this.txHost.tx.getRepository(Order);
  }

  async create(tenantId: string, dto: CreateOrderDto): Promise<Order> {
    const order = this.orders.create({
      tenantId,
      customerId: dto.customerId,
      amountCents: dto.amountCents,
      currency: dto.currency ?? 'usd',
      reference: dto.reference ?? null,
      status: 'pending',
      paidCents: 0,
    });
    try {
      // insert(), not save(): one INSERT ... RETURNING that fills in the id and created_at. A
      // save() would also open a transaction of its own where none is active (three round trips
      // for one statement) and diff the entity against nothing.
      await this.orders.insert(order);
    } catch (error) {
      if (
        error instanceof QueryFailedError &&
        (error.driverError as { code?: string }).code === UNIQUE_VIOLATION
      ) {
        throw new ConflictException({
          type: '/problems/duplicate_reference',
          code: 'duplicate_reference',
          title: 'Duplicate reference',
          detail: `An order with reference "${dto.reference}" already exists.`,
        });
      }
      throw error;
    }
    // Checked after the insert on purpose: a declined order must leave no row, which shows
    // that a stored failure rolls the handler's writes back while keeping its key.
    if (order.amountCents > CREDIT_LIMIT_CENTS) {
      throw new UnprocessableEntityException({
        type: '/problems/insufficient_funds',
        code: 'insufficient_funds',
        title: 'Insufficient funds',
        detail: `The order exceeds the credit limit of ${CREDIT_LIMIT_CENTS} cents.`,
      });
    }
    return order;
  }

  list(tenantId: string): Promise<Order[]> {
    return this.orders.find({ where: { tenantId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  async get(tenantId: string, id: string): Promise<Order> {
    const order = await this.orders.findOneBy({ tenantId, id });
    if (!order) {
      throw new NotFoundException({
        type: '/problems/order_not_found',
        code: 'order_not_found',
        title: 'Order not found',
        detail: `No order ${id} for this tenant.`,
      });
    }
    return order;
  }
}
