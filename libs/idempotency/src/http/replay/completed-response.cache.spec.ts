import { resolveOptions } from '../idempotency.defaults';
import type { StoredResponse } from '../idempotency.options';
import { CompletedResponseCache } from './completed-response.cache';

const response = (body: string): StoredResponse => ({
  statusCode: 201,
  headers: {},
  body: Buffer.from(body),
});
const id = (key: string, tenantId = 't') => ({ tenantId, scope: 'POST /x', key });

describe('CompletedResponseCache', () => {
  afterEach(() => jest.useRealTimers());

  it('keeps an outcome per tenant, scope and key', () => {
    const cache = new CompletedResponseCache(resolveOptions({}));
    cache.set(id('k', 'a'), 'h', response('A'), 60_000);
    expect(cache.get(id('k', 'a'))?.response.body.toString()).toBe('A');
    expect(cache.get(id('k', 'b'))).toBeUndefined();
    expect(cache.get({ ...id('k', 'a'), scope: 'POST /y' })).toBeUndefined();
  });

  it('never outlives the row (minus a second) nor maxAgeSeconds', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new CompletedResponseCache(
      resolveOptions({ replayCache: { maxAgeSeconds: 60 } }),
    );
    cache.set(id('short'), 'h', response('x'), 5_000);
    cache.set(id('long'), 'h', response('y'), 3_600_000);
    jest.advanceTimersByTime(4_001);
    expect(cache.get(id('short'))).toBeUndefined();
    expect(cache.get(id('long'))).toBeDefined();
    jest.advanceTimersByTime(56_000);
    expect(cache.get(id('long'))).toBeUndefined();
  });

  it('ends an entry with its row even when the wall clock steps back (NTP)', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new CompletedResponseCache(resolveOptions({}));
    cache.set(id('k'), 'h', response('x'), 5_000);
    jest.setSystemTime(1_000_000 - 3_600_000);
    jest.advanceTimersByTime(4_001);
    expect(cache.get(id('k'))).toBeUndefined();
  });

  it('drops the least recently used beyond maxEntries, and skips large bodies and a disabled cache', () => {
    const cache = new CompletedResponseCache(
      resolveOptions({ replayCache: { maxEntries: 2, maxBodyBytes: 10 } }),
    );
    cache.set(id('a'), 'h', response('a'), 60_000);
    cache.set(id('b'), 'h', response('b'), 60_000);
    cache.get(id('a'));
    cache.set(id('c'), 'h', response('c'), 60_000);
    expect(cache.get(id('b'))).toBeUndefined();
    expect(cache.get(id('a'))).toBeDefined();
    cache.set(id('big'), 'h', response('x'.repeat(11)), 60_000);
    expect(cache.get(id('big'))).toBeUndefined();

    const off = new CompletedResponseCache(resolveOptions({ replayCache: false }));
    off.set(id('a'), 'h', response('a'), 60_000);
    expect(off.get(id('a'))).toBeUndefined();
  });

  it('keeps the recently used through many evictions: a full cache holds the newest and the touched', () => {
    const cache = new CompletedResponseCache(resolveOptions({ replayCache: { maxEntries: 1000 } }));
    for (let index = 0; index < 5000; index++) {
      cache.set(id(`k${index}`), 'h', response(String(index)), 60_000);
      if (index % 100 === 0) expect(cache.get(id('k0'))).toBeDefined();
    }
    expect(cache.get(id('k0'))?.response.body.toString()).toBe('0');
    expect(cache.get(id('k1'))).toBeUndefined();
    expect(cache.get(id('k4000'))).toBeUndefined();
    expect(cache.get(id('k4001'))?.response.body.toString()).toBe('4001');
    expect(cache.get(id('k4999'))?.response.body.toString()).toBe('4999');
  });
});
