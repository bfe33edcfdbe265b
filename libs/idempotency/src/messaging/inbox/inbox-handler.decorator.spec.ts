import { InboxHandler } from './inbox-handler.decorator';

describe('@InboxHandler()', () => {
  it.each([0, -1, 1.5, Number.NaN])('refuses maxAttempts %p where it is written', (maxAttempts) => {
    expect(() => InboxHandler('payments', { maxAttempts })).toThrow(
      /maxAttempts must be a positive integer/,
    );
  });

  it('takes a positive whole maxAttempts, or none', () => {
    expect(() => InboxHandler('payments', { maxAttempts: 3 })).not.toThrow();
    expect(() => InboxHandler('payments')).not.toThrow();
  });
});
