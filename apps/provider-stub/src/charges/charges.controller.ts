import { Body, Controller, Get, Headers, HttpException, Post } from '@nestjs/common';
import { InjectTransactionHost, TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Idempotent } from 'nestjs-pg-idempotency';
import { randomUUID } from 'node:crypto';
import { PROVIDER_STUB_CONNECTION } from '../provider-stub.connection';
import { Charge } from './charge.entity';
import { CreateChargeDto } from './create-charge.dto';

/** The stub's view of a charge; field order here is the order on the wire. */
function toView(charge: Charge) {
  return {
    id: charge.id,
    amountCents: charge.amountCents,
    currency: charge.currency,
    reference: charge.reference,
    status: charge.status,
  };
}

/**
 * A fake card processor that deduplicates like a real one: with our own library. It declines
 * any amount ending in 13, deterministically, so the decline is stored and replayed too.
 */
@Controller('charges')
export class ChargesController {
  constructor(
    @InjectTransactionHost(PROVIDER_STUB_CONNECTION)
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  private get charges() {
    return this.txHost.tx.getRepository(Charge);
  }

  @Post()
  @Idempotent()
  async create(@Body() dto: CreateChargeDto, @Headers('idempotency-key') key: string) {
    if (dto.amountCents % 100 === 13) {
      throw new HttpException(
        {
          type: '/problems/card_declined',
          code: 'card_declined',
          title: 'Card declined',
          detail: 'The card was declined (the stub declines amounts ending in 13).',
        },
        402,
      );
    }
    const charge = await this.charges.save(
      this.charges.create({
        id: `ch_${randomUUID().replace(/-/g, '')}`,
        amountCents: dto.amountCents,
        currency: dto.currency,
        reference: dto.reference,
        status: 'succeeded',
        idempotencyKey: key,
      }),
    );
    return toView(charge);
  }

  /** Every charge recorded, oldest first, with the key it came with. */
  @Get()
  async list() {
    const charges = await this.charges.find({ order: { createdAt: 'ASC', id: 'ASC' } });
    return charges.map((charge) => ({
      ...toView(charge),
      idempotencyKey: charge.idempotencyKey,
      createdAt: charge.createdAt.toISOString(),
    }));
  }
}
