import {
  defaultShouldStore,
  principalTenantResolver,
  resolveOptions,
} from './idempotency.defaults';
import { Idempotent } from './idempotent.decorator';

describe('defaultShouldStore', () => {
  it('stores 2xx and 4xx except 408, 409, 425 and 429; releases the rest', () => {
    expect([200, 201, 204, 400, 404, 422].every(defaultShouldStore)).toBe(true);
    expect([408, 409, 425, 429, 500, 502, 503, 504, 302].some(defaultShouldStore)).toBe(false);
  });
});

describe('principalTenantResolver', () => {
  const contextWith = (user: unknown) =>
    ({ switchToHttp: () => ({ getRequest: () => ({ user }) }) }) as never;

  it('reads tenantId, userId, id or sub of the authenticated principal', () => {
    expect(principalTenantResolver(contextWith({ tenantId: 'acme', id: 'u1' }))).toBe('acme');
    expect(principalTenantResolver(contextWith({ userId: 42, username: 'ann' }))).toBe('42');
    expect(principalTenantResolver(contextWith({ sub: 'auth0|1' }))).toBe('auth0|1');
  });

  it('uses the anonymous scope only when there is no principal at all', () => {
    expect(principalTenantResolver(contextWith(undefined))).toBeUndefined();
  });

  it('fails closed on a principal it cannot scope by, never merging it into a shared scope', () => {
    expect(() => principalTenantResolver(contextWith({ username: 'ann' }))).toThrow(
      /tenantResolver/,
    );
    expect(() => principalTenantResolver(contextWith({ id: { nested: true } }))).toThrow(
      /tenantResolver/,
    );
    expect(() => principalTenantResolver(contextWith('ann'))).toThrow(/tenantResolver/);
  });
});

describe('resolveOptions', () => {
  it('names the type of a number given as a string, as ConfigService gives values from the environment', () => {
    expect(() => resolveOptions({ ttlSeconds: '3600' as never })).toThrow(
      'IdempotencyModule: option ttlSeconds must be a positive integer, got the string "3600" (convert it with Number())',
    );
    expect(() => resolveOptions({ maxResponseBytes: 0 })).toThrow(
      'option maxResponseBytes must be a positive integer, got 0',
    );
    expect(resolveOptions({}).maxResponseBytes).toBe(1_048_576);
    expect(() => resolveOptions({ lockTimeoutMs: -1 })).toThrow(
      'option lockTimeoutMs must be a positive integer, got -1',
    );
    expect(() => resolveOptions({ maxKeyLength: true as never })).toThrow('got boolean true');
  });

  it('stops the start on a timer Node.js would cut to 1 ms: a cleanup every 30 days, a lock wait of 25', () => {
    expect(() => resolveOptions({ cleanup: { intervalSeconds: 30 * 86_400 } })).toThrow(
      'IdempotencyModule: option cleanup.intervalSeconds must be at most 2147483 (about 24.8 days, the longest timer Node.js keeps), got 2592000',
    );
    expect(() => resolveOptions({ lockTimeoutMs: 25 * 86_400_000 })).toThrow(
      'option lockTimeoutMs must be at most 2147483647',
    );
    expect(
      resolveOptions({ cleanup: { intervalSeconds: 2_147_483 } }).cleanup.intervalSeconds,
    ).toBe(2_147_483);
  });

  it('guards writes by default, and stops the start on a writeGuard it does not know', () => {
    expect(resolveOptions({}).writeGuard).toBe('throw');
    expect(resolveOptions({ writeGuard: 'warn' }).writeGuard).toBe('warn');
    expect(() => resolveOptions({ writeGuard: 'strict' as never })).toThrow(
      `IdempotencyModule: option writeGuard must be 'throw', 'warn' or 'off', got the string "strict"`,
    );
  });

  it('takes any HTTP header name as headerName, and stops the start on anything else', () => {
    expect(resolveOptions({ headerName: 'X-Request-Key' }).headerName).toBe('X-Request-Key');
    for (const headerName of ['', 'Idempotency Key', 'Key:', 'Clé', 42]) {
      expect(() => resolveOptions({ headerName: headerName as never })).toThrow(
        'option headerName must be an HTTP header name',
      );
    }
  });
});

describe('@Idempotent() options', () => {
  it('refuses an empty scope, which would be one key space for every route that gives it', () => {
    for (const scope of ['', '   ', 7]) {
      expect(() => Idempotent({ scope: scope as never })).toThrow(
        '@Idempotent(): scope must be a non-empty string',
      );
    }
    expect(() => Idempotent({ scope: 'orders' })).not.toThrow();
  });
});

describe('resolveOptions: encryption', () => {
  const key = Buffer.alloc(32, 7);
  const resolve = (encryption: unknown) => () => resolveOptions({ encryption } as never);

  it('is off without the option, and takes Buffers and base64 strings of 32 bytes', () => {
    expect(resolveOptions({}).encryption).toEqual({ keys: [], unsealedRows: 'replay' });
    const resolved = resolveOptions({
      encryption: {
        keys: [
          { id: 'new', key: key.toString('base64') },
          { id: 'old', key },
        ],
        unsealedRows: 'refuse',
      },
    }).encryption;
    expect(resolved).toEqual({
      keys: [
        { id: 'new', key },
        { id: 'old', key },
      ],
      unsealedRows: 'refuse',
    });
  });

  it('stops the start on a keyring that cannot work, naming the option, never the key', () => {
    expect(resolve({ keys: [] })).toThrow(/encryption\.keys must list at least one key/);
    expect(resolve({})).toThrow(/encryption\.keys must list at least one key/);
    expect(resolve({ keys: [{ id: '', key }] })).toThrow(/keys\[0\]\.id must be a non-empty/);
    expect(resolve({ keys: [{ id: 'a'.repeat(256), key }] })).toThrow(/at most 255 bytes/);
    expect(
      resolve({
        keys: [
          { id: 'k', key },
          { id: 'k', key },
        ],
      }),
    ).toThrow(/the id "k" twice/);
    expect(resolve({ keys: [{ id: 'k', key: Buffer.alloc(16) }] })).toThrow(
      /keys\[0\] \("k"\)\.key must be 32 bytes, got 16/,
    );
    expect(resolve({ keys: [{ id: 'k', key: Buffer.alloc(16).toString('base64') }] })).toThrow(
      /must decode to 32 bytes, got 16/,
    );
    const notBase64 = 'not base64!'.padEnd(44, '#');
    expect(resolve({ keys: [{ id: 'k', key: notBase64 }] })).toThrow(/is not base64/);
    expect(resolve({ keys: [{ id: 'k', key: notBase64 }] })).not.toThrow(/#/);
    expect(resolve({ keys: [{ id: 'k', key: 42 }] })).toThrow(/a Buffer or a base64 string/);
    expect(resolve({ keys: [{ id: 'k', key }], unsealedRows: 'drop' })).toThrow(
      /unsealedRows must be 'replay' or 'refuse'/,
    );
  });
});
