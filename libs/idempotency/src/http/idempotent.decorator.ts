import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_ROUTE } from './idempotency.constants';
import { assertWriteGuardMode, describeValue } from './idempotency.defaults';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotentOptions } from './idempotency.options';

/**
 * Makes a route safe to retry: the first request with a key runs the handler inside one
 * transaction with the claim and the recorded response; every retry gets that response back.
 * On a class it applies to every unsafe-method route of the controller (GET, HEAD and OPTIONS are
 * left alone); on a method as well, the method's options are merged over the class's, field by
 * field, and the module's fill in the rest. However often the decorator is applied, a request
 * has exactly one idempotency run.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator & ClassDecorator {
  for (const name of ['ttlSeconds', 'leaseSeconds'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      throw new Error(
        `@Idempotent(): ${name} must be a positive integer, got ${describeValue(value)}`,
      );
    }
  }
  if (options.writeGuard !== undefined)
    assertWriteGuardMode('@Idempotent(): writeGuard', options.writeGuard);
  // An empty scope would be one key space for every route that gives it.
  if (options.scope !== undefined && (typeof options.scope !== 'string' || !options.scope.trim())) {
    throw new Error(
      `@Idempotent(): scope must be a non-empty string, got ${describeValue(options.scope)}`,
    );
  }
  return applyDecorators(
    SetMetadata(IDEMPOTENT_ROUTE, { ...options }),
    UseInterceptors(IdempotencyInterceptor),
  );
}
