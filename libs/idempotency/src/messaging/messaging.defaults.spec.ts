import { resolveMessagingOptions } from './messaging.defaults';

describe('resolveMessagingOptions', () => {
  it.each([
    ['cleanup.intervalSeconds', { cleanup: { intervalSeconds: 30 * 86_400 } }, 2_147_483],
    ['outbox.pollIntervalMs', { outbox: { pollIntervalMs: 2 ** 31 } }, 2 ** 31 - 1],
    ['inbox.retryDelayMs', { inbox: { retryDelayMs: 2 ** 31 } }, 2 ** 31 - 1],
    ['inbox.lockTimeoutMs', { inbox: { lockTimeoutMs: 2 ** 31 } }, 2 ** 31 - 1],
  ])('stops the start on %s past the longest timer Node.js keeps', (name, options, max) => {
    expect(() => resolveMessagingOptions(options)).toThrow(
      `IdempotencyMessagingModule: option ${name} must be at most ${max} (about 24.8 days`,
    );
  });

  it('takes the longest interval that fits, and 0 (no cleanup)', () => {
    expect(
      resolveMessagingOptions({ cleanup: { intervalSeconds: 2_147_483 } }).cleanup.intervalSeconds,
    ).toBe(2_147_483);
    expect(
      resolveMessagingOptions({ cleanup: { intervalSeconds: 0 } }).cleanup.intervalSeconds,
    ).toBe(0);
  });
});
