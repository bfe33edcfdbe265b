import { tenantIdOf } from './key-id';

describe('tenantIdOf', () => {
  it('takes text as it is, no tenant as empty text, and a numeric id as its decimal text', () => {
    expect(tenantIdOf('acme')).toBe('acme');
    expect(tenantIdOf(undefined)).toBe('');
    expect(tenantIdOf(null)).toBe('');
    expect(tenantIdOf(42)).toBe('42');
    expect(tenantIdOf(42n)).toBe('42');
  });

  it('refuses what would merge tenants: objects, booleans, NaN', () => {
    expect(() => tenantIdOf({ id: 'acme' })).toThrow(/returned an object/);
    expect(() => tenantIdOf(true)).toThrow(/returned a boolean/);
    expect(() => tenantIdOf(Number.NaN)).toThrow(/returned a number/);
  });
});
