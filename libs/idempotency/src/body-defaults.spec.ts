import 'reflect-metadata';
import { Body, Controller, Post } from '@nestjs/common';
import { bodyWithDefaults } from './body-defaults';

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
    expect(JSON.stringify(withDefaults({ name: 'a' }))).toBe(JSON.stringify(withDefaults({ name: 'a', size: 1, tags: ['new'] })));
    expect(withDefaults({ name: 'a' })).toEqual(expect.objectContaining({ name: 'a', size: 1, tags: ['new'] }));
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
    const hashed = bodyWithDefaults(stamped, stamped.create as never, { name: 'a' }) as Record<string, unknown>;
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
      expect(bodyWithDefaults(frozen, frozen.create as never, {})).toEqual({ at: expect.any(Number) });
    } finally {
      jest.useRealTimers();
    }
  });

  it('keeps such a field when the client sent it', () => {
    expect(withDefaults({ name: 'a', nonce: 'n1' })).toEqual(expect.objectContaining({ nonce: 'n1' }));
  });

  it('passes bodies through untouched without a DTO class, or when the body is not an object', () => {
    const raw = { b: 1, a: 2 };
    expect(withDefaults(raw, 'raw')).toBe(raw);
    expect(withDefaults([1, 2])).toEqual([1, 2]);
    expect(withDefaults(undefined)).toBeUndefined();
  });
});
