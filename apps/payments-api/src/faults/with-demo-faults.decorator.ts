import {
  applyDecorators,
  createParamDecorator,
  type ExecutionContext,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { REQUEST_FAULT, type FaultyRequest } from './demo-faults';
import {
  DemoFaultsInterceptor,
  HANDLER_FAULTS,
  type HandlerFault,
} from './demo-faults.interceptor';

/**
 * The faults a route honours around its handler (`X-Demo-Fault`, with `DEMO_FAULTS=1`). Put it
 * above `@Idempotent()`: decorators apply bottom-up, so its interceptor comes after the
 * idempotency interceptor and runs inside its transaction.
 */
export function WithDemoFaults(...faults: HandlerFault[]): MethodDecorator {
  return applyDecorators(
    SetMetadata(HANDLER_FAULTS, faults),
    UseInterceptors(DemoFaultsInterceptor),
  );
}

/** The request's fault (undefined without one, or with faults off), for faults deep in a service. */
export const DemoFault = createParamDecorator(
  (_data: unknown, context: ExecutionContext) =>
    context.switchToHttp().getRequest<FaultyRequest>()[REQUEST_FAULT],
);
