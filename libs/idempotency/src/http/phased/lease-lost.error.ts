import { IdempotencyError } from '../../shared/idempotency-error';

/**
 * The lease ran out and another attempt took the key over: this attempt must stop writing.
 * Its current step rolls back; the new owner resumes from the last committed recovery point.
 */
export class LeaseLostError extends IdempotencyError {
  constructor(step: string) {
    super(`lease lost before recovery point "${step}" could be recorded`);
  }
}
