import {
  defaultShouldStore,
  principalTenantResolver,
  resolveOptions,
} from './idempotency.defaults';

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

  it('guards writes by default, and stops the start on a writeGuard it does not know', () => {
    expect(resolveOptions({}).writeGuard).toBe('throw');
    expect(resolveOptions({ writeGuard: 'warn' }).writeGuard).toBe('warn');
    expect(() => resolveOptions({ writeGuard: 'strict' as never })).toThrow(
      `IdempotencyModule: option writeGuard must be 'throw', 'warn' or 'off', got the string "strict"`,
    );
  });
});
