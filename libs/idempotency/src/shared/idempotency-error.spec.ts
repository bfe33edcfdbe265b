import { IdempotencyError } from './idempotency-error';
import { IdempotencyRejection } from '../http/idempotency.errors';
import {
  MessageInFlightError,
  MissingMessageIdError,
  UnprocessableMessageError,
} from '../messaging/inbox/inbox.errors';
import { LeaseLostError } from '../http/phased/lease-lost.error';

describe('IdempotencyError', () => {
  it.each([
    ['LeaseLostError', new LeaseLostError('charged')],
    ['MissingMessageIdError', new MissingMessageIdError('empty')],
    ['UnprocessableMessageError', new UnprocessableMessageError('no such order')],
    ['MessageInFlightError', new MessageInFlightError(5000)],
    ['IdempotencyRejection', IdempotencyRejection.keyReused()],
  ])('is the base of %s, which keeps its own name and stack', (name, error) => {
    expect(error).toBeInstanceOf(IdempotencyError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error.stack).toContain(name);
  });

  it('carries a cause', () => {
    const cause = new Error('the database went away');
    expect(new IdempotencyError('could not record', { cause }).cause).toBe(cause);
  });
});
