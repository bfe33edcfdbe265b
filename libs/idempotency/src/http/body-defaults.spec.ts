import 'reflect-metadata';
import { Body, Controller, Post } from '@nestjs/common';
import { plainToInstance, Type } from 'class-transformer';
import { IsInt, IsOptional, IsString } from 'class-validator';
import fc from 'fast-check';
import { bodyWithDefaults } from './body-defaults';
import { canonicalJson, MAX_BODY_DEPTH, requestFingerprint } from './fingerprint';
import { IdempotencyProblemType, IdempotencyRejection } from './idempotency.errors';

class CreateThing {
  name!: string;
  size: number = 1;
  tags: string[] = ['new'];
  /** Differs on every creation. */
  nonce: string = Math.random().toString(36);
  /** Equal when two creations fall in the same millisecond, yet a timestamp all the same. */
  createdAt: Date = new Date();
}

@Controller()
class ThingsController {
  @Post()
  create(@Body() body: CreateThing): CreateThing {
    return body;
  }

  @Post('raw')
  raw(@Body() body: Record<string, unknown>): Record<string, unknown> {
    return body;
  }
}

const controller = new ThingsController();
const withDefaults = (body: unknown, handler: 'create' | 'raw' = 'create') =>
  bodyWithDefaults(controller, controller[handler] as never, body);

describe('bodyWithDefaults', () => {
  it('adds the stable defaults of the DTO, so an omitted default and its explicit value are one body', () => {
    expect(JSON.stringify(withDefaults({ name: 'a' }))).toBe(
      JSON.stringify(withDefaults({ name: 'a', size: 1, tags: ['new'] })),
    );
    expect(withDefaults({ name: 'a' })).toEqual(
      expect.objectContaining({ name: 'a', size: 1, tags: ['new'] }),
    );
  });

  it('leaves out defaults that differ between creations, random or time-based', () => {
    const body = withDefaults({ name: 'a' }) as Record<string, unknown>;
    expect(body).not.toHaveProperty('nonce');
    expect(body).not.toHaveProperty('createdAt');
    expect(JSON.stringify(withDefaults({ name: 'a' }))).toBe(JSON.stringify(body));
  });

  it('leaves out defaults read from the clock as strings or numbers, though two quick creations agree', () => {
    class Stamped {
      name!: string;
      requestedAt: string = new Date().toISOString();
      receivedAtMs: number = Date.now();
      version: string = 'v1';
    }
    @Controller()
    class StampedController {
      @Post()
      create(@Body() body: Stamped): Stamped {
        return body;
      }
    }
    const stamped = new StampedController();
    const hashed = bodyWithDefaults(stamped, stamped.create as never, { name: 'a' }) as Record<
      string,
      unknown
    >;
    expect(hashed).not.toHaveProperty('requestedAt');
    expect(hashed).not.toHaveProperty('receivedAtMs');
    expect(hashed).toEqual(expect.objectContaining({ name: 'a', version: 'v1' }));
  });

  it('does not hang when the clock is frozen (fake timers in a test)', () => {
    class Frozen {
      at: number = Date.now();
    }
    @Controller()
    class FrozenController {
      @Post()
      create(@Body() body: Frozen): Frozen {
        return body;
      }
    }
    const frozen = new FrozenController();
    jest.useFakeTimers();
    try {
      expect(bodyWithDefaults(frozen, frozen.create as never, {})).toEqual({
        at: expect.any(Number),
      });
    } finally {
      jest.useRealTimers();
    }
  });

  it('keeps such a field when the client sent it', () => {
    expect(withDefaults({ name: 'a', nonce: 'n1' })).toEqual(
      expect.objectContaining({ nonce: 'n1' }),
    );
  });

  it('keeps the fingerprint of a DTO route that rows stored by earlier versions hold', () => {
    const fingerprint = (body: unknown) =>
      requestFingerprint({
        method: 'POST',
        route: '/things',
        params: {},
        query: {},
        body: withDefaults(body),
      });
    expect(fingerprint({ name: 'a' })).toBe(
      '2d3e90f5cf13857c4b15bfaf2c85f3eb389ed533819ed8fce8a3a61fdcd38454',
    );
    expect(fingerprint({ name: 'a', size: 2, tags: ['x', 'y'], nonce: 'n1' })).toBe(
      'dc073372fd789851ad9dde5cc5f33dd5e1b05c3eeb51b519fdbeef965d7c9ab4',
    );
  });

  it('rejects a body nested past MAX_BODY_DEPTH before class-transformer recurses into it', () => {
    for (const tags of [
      JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`),
      JSON.parse(`${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`),
    ]) {
      let thrown: unknown;
      try {
        withDefaults({ name: 'a', tags });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(IdempotencyRejection);
      expect((thrown as IdempotencyRejection).problem).toMatchObject({
        type: IdempotencyProblemType.unfingerprintableRequest,
        status: 400,
      });
    }
  });

  it(`re-creates a DTO body ${MAX_BODY_DEPTH} levels deep`, () => {
    let tags: unknown = 'leaf';
    for (let level = 1; level < MAX_BODY_DEPTH; level++) tags = [tags];
    expect(withDefaults({ name: 'a', tags })).toEqual(
      expect.objectContaining({ name: 'a', tags, size: 1 }),
    );
  });

  it('never throws anything but the rejection, whatever JSON a DTO route is sent', () => {
    const depth = fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 2 * MAX_BODY_DEPTH }), weight: 9 },
      { arbitrary: fc.constant(50_000), weight: 1 },
    );
    const deep = fc.tuple(depth, fc.boolean()).map(([depth, arrays]) => {
      let value: unknown = 1;
      for (let level = 0; level < depth; level++) value = arrays ? [value] : { a: value };
      return value;
    });
    const body = fc.dictionary(
      fc.constantFrom('name', 'size', 'tags', 'nonce', '__proto__', 'constructor', 'other'),
      fc.oneof(fc.jsonValue(), deep),
    );
    fc.assert(
      fc.property(body, (sent) => {
        try {
          requestFingerprint({
            method: 'POST',
            route: '/things',
            params: {},
            query: {},
            body: withDefaults(sent),
          });
        } catch (error) {
          expect(error).toBeInstanceOf(IdempotencyRejection);
        }
      }),
    );
  });

  it('keeps __proto__ keys, which class-transformer drops, so they count in the fingerprint', () => {
    const fingerprint = (body: unknown) =>
      requestFingerprint({
        method: 'POST',
        route: '/things',
        params: {},
        query: {},
        body: withDefaults(body),
      });
    const sent = JSON.parse('{"name":"a","__proto__":{"size":2,"polluted":true}}');
    const nestedProto = JSON.parse('{"name":"a","tags":[{"__proto__":{"polluted":true}}]}');
    expect(Object.keys(withDefaults(sent) as object)).toContain('__proto__');
    expect(fingerprint(sent)).not.toBe(fingerprint({ name: 'a' }));
    expect(fingerprint(sent)).toBe(
      fingerprint(JSON.parse('{"__proto__":{"polluted":true,"size":2},"name":"a"}')),
    );
    expect(fingerprint(nestedProto)).not.toBe(fingerprint({ name: 'a', tags: [{}] }));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(sent)).toBe(Object.prototype);
  });

  it('passes bodies through untouched without a DTO class, or when the body is not an object', () => {
    const raw = { b: 1, a: 2 };
    expect(withDefaults(raw, 'raw')).toBe(raw);
    expect(withDefaults([1, 2])).toEqual([1, 2]);
    expect(withDefaults(undefined)).toBeUndefined();
  });

  describe('the same JSON as class-transformer gives, the short way or the long', () => {
    class Plain {
      @IsString()
      customerId!: string;

      @IsInt()
      amountCents!: number;

      @IsOptional()
      @IsString()
      currency: string = 'usd';

      options: { gift: boolean; tags: string[] } = { gift: false, tags: [] };
    }
    class Line {
      sku!: string;
      quantity: number = 1;
    }
    /** class-transformer has work here: a nested type with its own defaults. */
    class WithLines {
      @Type(() => Line)
      lines: Line[] = [];

      note: string = 'none';
    }
    /** A method a body key may name: class-transformer leaves such keys out. */
    class WithMethod {
      name: string = 'x';

      total(): number {
        return 0;
      }
    }

    @Controller()
    class Routes {
      @Post('plain')
      plain(@Body() body: Plain) {
        return body;
      }

      @Post('lines')
      lines(@Body() body: WithLines) {
        return body;
      }

      @Post('method')
      method(@Body() body: WithMethod) {
        return body;
      }
    }
    const routes = new Routes();
    const keyName = fc.oneof(
      fc.constantFrom('customerId', 'amountCents', 'currency', 'options', 'lines', 'note'),
      fc.constantFrom('name', 'total', 'constructor', 'sku', 'quantity'),
      fc.string({ maxLength: 6 }),
    );
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(keyName, tie('value'), { maxKeys: 4 }),
      ),
    }));
    const body = fc
      .dictionary(keyName, value, { maxKeys: 6 })
      // JSON's own objects: what a parsed request body is (own `constructor` keys included).
      .map((object) => JSON.parse(JSON.stringify(object)) as Record<string, unknown>);

    it.each([
      ['plain', Plain],
      ['lines', WithLines],
      ['method', WithMethod],
    ] as const)('%s', (route, type) => {
      fc.assert(
        fc.property(body, (sent) => {
          let expected: string;
          try {
            expected = canonicalJson(plainToInstance(type as new () => object, sent));
          } catch {
            // A body class-transformer trips on is fingerprinted as sent.
            expected = canonicalJson(sent);
          }
          const handler = routes[route] as never;
          expect(canonicalJson(bodyWithDefaults(routes, handler, sent))).toBe(expected);
        }),
        { numRuns: 300 },
      );
    });
  });
});
