import fc from 'fast-check';
import { childKey } from './child-key';

describe('childKey', () => {
  it('is deterministic: a retried parent derives the same child keys', () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (parent, step) => {
        expect(childKey(parent, step)).toBe(childKey(parent, step));
      }),
    );
  });

  it('differs between steps and between parents, and never equals the parent', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        (parent, a, b) => {
          fc.pre(a !== b);
          expect(childKey(parent, a)).not.toBe(childKey(parent, b));
          expect(childKey(`${parent}x`, a)).not.toBe(childKey(parent, a));
          expect(childKey(parent, a)).not.toBe(parent);
        },
      ),
    );
  });

  it('does not let the step name shift into the parent key', () => {
    expect(childKey('ab', 'c')).not.toBe(childKey('a', 'bc'));
  });

  it('is a 64-character hex string, a valid key for any downstream service', () => {
    expect(childKey('parent', 'charge-card')).toMatch(/^[0-9a-f]{64}$/);
  });
});
