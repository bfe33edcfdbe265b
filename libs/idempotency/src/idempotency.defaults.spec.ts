import { defaultShouldStore, principalTenantResolver } from './idempotency.defaults';

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
    expect(() => principalTenantResolver(contextWith({ username: 'ann' }))).toThrow(/tenantResolver/);
    expect(() => principalTenantResolver(contextWith({ id: { nested: true } }))).toThrow(/tenantResolver/);
    expect(() => principalTenantResolver(contextWith('ann'))).toThrow(/tenantResolver/);
  });
});
