import { randomUUID } from 'node:crypto';
import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import { Transform, Type } from 'class-transformer';
import { IsArray, IsInt, IsOptional, IsString, ValidateNested } from 'class-validator';
import { IdempotencyModule, Idempotent } from 'nestjs-pg-idempotency';
import request from 'supertest';
import { TestDatabase } from '../support/test-database';
import { createLibraryApp, Effects } from './library-app';

/** A basket line whose defaults differ on every creation: a timestamp and a random id. */
class LineDto {
  @IsString()
  sku!: string;

  @IsOptional()
  @IsInt()
  quantity: number = 1;

  @IsOptional()
  @IsString()
  addedAt: string = new Date(Date.now() + Math.random()).toISOString();

  @IsOptional()
  @IsString()
  lineId: string = randomUUID();
}

class BasketDto {
  @IsString()
  tag!: string;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => LineDto)
  lines: LineDto[] = [];

  @IsOptional()
  @ValidateNested()
  @Type(() => LineDto)
  gift?: LineDto;
}

class MapBasketDto {
  @IsString()
  tag!: string;

  @ValidateNested({ each: true })
  @Type(() => LineDto)
  lines!: Map<string, LineDto>;
}

/** A value object whose constructor needs its arguments, as money and date types do. */
class Money {
  constructor(
    readonly cents: number,
    readonly currency: string,
  ) {
    if (typeof cents !== 'number') throw new Error('Money needs cents');
  }
}

class PaymentDto {
  @IsString()
  tag!: string;

  @IsOptional()
  price: Money = new Money(0, 'usd');

  @Transform(({ value }) => new Money(Number(value), 'usd'))
  tip!: Money;
}

class GridDto {
  @IsString()
  tag!: string;

  @Type(() => LineDto)
  grid!: LineDto[][];

  @IsOptional()
  @Type(() => Buffer)
  data?: Buffer;
}

/** Its subtype is told by `kind`, which class-transformer takes out of what it reads. */
class PaymentMethodDto {}

class CardDto extends PaymentMethodDto {
  @IsString()
  last4!: string;
}

class BankDto extends PaymentMethodDto {
  @IsString()
  last4!: string;
}

class CheckoutDto {
  @IsString()
  tag!: string;

  @ValidateNested()
  @Type(() => PaymentMethodDto, {
    discriminator: {
      property: 'kind',
      subTypes: [
        { value: CardDto, name: 'card' },
        { value: BankDto, name: 'bank' },
      ],
    },
  })
  method!: PaymentMethodDto;
}

const paymentKinds = {
  discriminator: {
    property: 'kind',
    subTypes: [
      { value: CardDto, name: 'card' },
      { value: BankDto, name: 'bank' },
    ],
  },
};

/** Two DTOs that nest each other, the discriminated method on the first. */
class OrderNodeDto {
  @IsString()
  tag!: string;

  @IsOptional()
  @ValidateNested()
  @Type(() => CustomerNodeDto)
  customer?: object; // the class is declared below: its metadata cannot name it here

  @IsOptional()
  @ValidateNested()
  @Type(() => PaymentMethodDto, paymentKinds)
  method?: PaymentMethodDto;
}

class CustomerNodeDto {
  @IsString()
  tag!: string;

  @IsOptional()
  @ValidateNested()
  @Type(() => OrderNodeDto)
  lastOrder?: OrderNodeDto;
}

class ModernEnvelopeDto {
  @ValidateNested()
  @Type(() => PaymentMethodDto, paymentKinds)
  method!: PaymentMethodDto;
}

/** A `@Type` whose function needs the object it types: what it builds is known per request. */
class EnvelopeDto {
  @IsString()
  tag!: string;

  @ValidateNested()
  @Type((options) =>
    (options?.object as { legacy?: boolean }).legacy ? Object : ModernEnvelopeDto,
  )
  inner!: ModernEnvelopeDto;
}

class OrderDto {
  @IsString()
  tag!: string;

  @IsOptional()
  @IsInt()
  quantity: number = 1;
}

/** A tracing decorator as apps write them: the handler wrapped, its metadata copied over. */
function Traced(): MethodDecorator {
  return (_target, _name, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => unknown;
    const withSpan = function (this: unknown, ...args: unknown[]) {
      return original.apply(this, args);
    };
    for (const key of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(key, Reflect.getMetadata(key, original), withSpan);
    }
    descriptor.value = withSpan;
  };
}

@Controller('defaults')
class DefaultsController {
  constructor(private readonly effects: Effects) {}

  @Post('basket')
  @Idempotent()
  async basket(@Body() body: BasketDto) {
    return { id: await this.effects.record('basket', body.tag), lines: body.lines.length };
  }

  @Post('map-basket')
  @Idempotent()
  async mapBasket(@Body() body: MapBasketDto) {
    return { id: await this.effects.record('map-basket', body.tag), lines: body.lines.size };
  }

  @Post('payment')
  @Idempotent()
  async payment(@Body() body: PaymentDto) {
    return { id: await this.effects.record('payment', body.tag), tip: body.tip.cents };
  }

  @Post('grid')
  @Idempotent()
  async grid(@Body() body: GridDto) {
    return {
      id: await this.effects.record('grid', body.tag),
      lines: body.grid.flat().length,
      data: body.data?.length,
    };
  }

  @Post('checkout')
  @Idempotent()
  async checkout(@Body() body: CheckoutDto) {
    return {
      id: await this.effects.record('checkout', body.tag),
      method: body.method.constructor.name,
    };
  }

  @Post('order-nodes')
  @Idempotent()
  async orderNode(@Body() body: OrderNodeDto) {
    return { id: await this.effects.record('order-nodes', body.tag) };
  }

  @Post('customer-nodes')
  @Idempotent()
  async customerNode(@Body() body: CustomerNodeDto) {
    return {
      id: await this.effects.record('customer-nodes', body.tag),
      method: body.lastOrder?.method?.constructor.name,
    };
  }

  @Post('envelope')
  @Idempotent()
  async envelope(@Body() body: EnvelopeDto) {
    return {
      id: await this.effects.record('envelope', body.tag),
      method: body.inner.method.constructor.name,
    };
  }

  @Traced()
  @Post('traced')
  @Idempotent()
  async traced(@Body() body: OrderDto) {
    return { id: await this.effects.record('traced', body.tag), quantity: body.quantity };
  }
}

/**
 * The fingerprint counts a DTO's defaults as sent (`{}` and `{ quantity: 1 }` are one request)
 * and leaves out those that differ on every creation: in nested DTOs too, and on a handler a
 * method decorator wrapped. Without the replay cache, so that each retry meets the database's
 * fingerprint, as one reaching another process does.
 */
describe('DTO defaults in the fingerprint', () => {
  let app: INestApplication;
  const db = new TestDatabase();
  beforeAll(async () => {
    ({ app } = await createLibraryApp(
      IdempotencyModule.forRoot({ replayCache: false, cleanup: false }),
      undefined,
      {},
      { controllers: [DefaultsController] },
    ));
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  const post = (path: string, key: string, body: object) =>
    request(app.getHttpServer()).post(`/defaults/${path}`).set('idempotency-key', key).send(body);
  const effects = async (tag: string) =>
    (await db.query('SELECT 1 FROM library_test_effects WHERE tag = $1', [tag])).length;

  it('replays a retry of a body whose nested lines have unstable defaults, and runs once', async () => {
    const key = randomUUID();
    const tag = `basket-${key}`;
    const body = { tag, lines: [{ sku: 'a' }, { sku: 'b', quantity: 2 }], gift: { sku: 'g' } };
    const first = await post('basket', key, body);
    expect(first.status).toBe(201);
    const retry = await post('basket', key, body);
    expect({ status: retry.status, text: retry.text }).toEqual({ status: 201, text: first.text });
    // A nested default given explicitly is the same request; another value is not.
    const explicit = await post('basket', key, {
      ...body,
      lines: [{ sku: 'a', quantity: 1 }, body.lines[1]],
    });
    expect(explicit.text).toBe(first.text);
    expect(
      (await post('basket', key, { ...body, lines: [{ sku: 'a', quantity: 3 }] })).status,
    ).toBe(422);
    expect(await effects(tag)).toBe(1);
  });

  it('replays a retry whose Map of nested DTOs has unstable defaults', async () => {
    const key = randomUUID();
    const tag = `map-basket-${key}`;
    const body = { tag, lines: { a: { sku: 'a' }, b: { sku: 'b', quantity: 2 } } };
    const first = await post('map-basket', key, body);
    expect(first.status).toBe(201);
    expect((await post('map-basket', key, body)).text).toBe(first.text);
    expect(await effects(tag)).toBe(1);
  });

  it('leaves value objects whole: their defaults and what a @Transform built from the body', async () => {
    const key = randomUUID();
    const tag = `payment-${key}`;
    const first = await post('payment', key, { tag, tip: 150 });
    expect(first.status).toBe(201);
    expect((await post('payment', key, { tag, tip: 150 })).text).toBe(first.text);
    expect((await post('payment', key, { tag, tip: 200 })).status).toBe(422);
    expect(await effects(tag)).toBe(1);
  });

  it('walks arrays of arrays of nested DTOs, and leaves a Buffer built by @Type alone', async () => {
    const key = randomUUID();
    const tag = `grid-${key}`;
    const body = { tag, grid: [[{ sku: 'a' }], [{ sku: 'b' }, { sku: 'c' }]], data: 'abc' };
    const first = await post('grid', key, body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ lines: 3, data: 3 });
    expect((await post('grid', key, body)).text).toBe(first.text);
    expect(await effects(tag)).toBe(1);
  });

  it('leaves a discriminated body as the pipes must find it, and tells its kinds apart', async () => {
    const key = randomUUID();
    const tag = `checkout-${key}`;
    const card = await post('checkout', key, { tag, method: { kind: 'card', last4: '4242' } });
    expect(card.status).toBe(201);
    expect(card.body.method).toBe('CardDto');
    const bank = await post('checkout', key, { tag, method: { kind: 'bank', last4: '4242' } });
    expect(bank.status).toBe(422);
    expect(
      (await post('checkout', key, { tag, method: { kind: 'card', last4: '4242' } })).text,
    ).toBe(card.text);
    expect(await effects(tag)).toBe(1);
  });

  it('finds a discriminator below DTOs that nest each other, whichever route came first', async () => {
    await post('order-nodes', randomUUID(), { tag: `order-node-${randomUUID()}` }).expect(201);
    const key = randomUUID();
    const tag = `customer-node-${key}`;
    const send = (kind: string) =>
      post('customer-nodes', key, { tag, lastOrder: { tag, method: { kind, last4: '4242' } } });
    const card = await send('card');
    expect(card.body.method).toBe('CardDto');
    expect((await send('bank')).status).toBe(422);
    expect(await effects(tag)).toBe(1);
  });

  it('fingerprints as sent a body below a @Type whose function reads the object it types', async () => {
    const key = randomUUID();
    const tag = `envelope-${key}`;
    const send = (kind: string) =>
      post('envelope', key, { tag, inner: { method: { kind, last4: '4242' } } });
    const card = await send('card');
    expect(card.body.method).toBe('CardDto');
    expect((await send('bank')).status).toBe(422);
    expect(await effects(tag)).toBe(1);
  });

  it('reads the DTO of a handler a method decorator wrapped: a default sent explicitly replays', async () => {
    const key = randomUUID();
    const tag = `traced-${key}`;
    const first = await post('traced', key, { tag });
    expect(first.status).toBe(201);
    expect(first.body.quantity).toBe(1);
    const explicit = await post('traced', key, { tag, quantity: 1 });
    expect({ status: explicit.status, text: explicit.text }).toEqual({
      status: 201,
      text: first.text,
    });
    expect(await effects(tag)).toBe(1);
  });
});
