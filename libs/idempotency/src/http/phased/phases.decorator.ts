import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { IdempotentPhases } from './idempotent-phases';

/** Where the phased runner leaves the request's `IdempotentPhases` for `@Phases()`. */
export const PHASES = Symbol('idempotency:phases');

/** Injects the request's `IdempotentPhases`; the route needs `@Idempotent({ phased: true })`. */
export const Phases = createParamDecorator(
  (_data: unknown, context: ExecutionContext): IdempotentPhases => {
    const phases = context.switchToHttp().getRequest<{ [PHASES]?: IdempotentPhases }>()[PHASES];
    if (!phases) {
      throw new Error(
        '@Phases() is only available on routes decorated with @Idempotent({ phased: true })',
      );
    }
    return phases;
  },
);
