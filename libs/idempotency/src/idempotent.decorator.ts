import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_ROUTE } from './idempotency.constants';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotentOptions } from './idempotency.options';

/**
 * Makes a route safe to retry: the first request with a key runs the handler inside one
 * transaction with the claim and the recorded response; every retry gets that response back.
 * On a class it applies to every route of the controller; a method's options win.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator & ClassDecorator {
  for (const name of ['ttlSeconds', 'leaseSeconds'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      throw new Error(`@Idempotent(): ${name} must be a positive integer, got ${value}`);
    }
  }
  return applyDecorators(
    // A phased attempt must be resumable by its retry, which needs the key.
    SetMetadata(IDEMPOTENT_ROUTE, { ...options, required: options.phased ? true : (options.required ?? true) }),
    UseInterceptors(IdempotencyInterceptor),
  );
}
