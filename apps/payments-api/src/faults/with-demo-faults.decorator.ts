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
 * Whether the route-level fault hooks are attached: decided when the controllers load, from the
 * environment the process started with. With faults off a route carries no hook at all, so its
 * requests pay nothing for it (an interceptor costs every request that passes it, even one that
 * hands on at once). `AppModule.register` refuses `demoFaults` without it.
 */
export const HANDLER_FAULT_HOOKS_ATTACHED = process.env.DEMO_FAULTS === '1';

/**
 * The faults a route honours around its handler (`X-Demo-Fault`, with `DEMO_FAULTS=1`). Put it
 * above `@Idempotent()`: decorators apply bottom-up, so its interceptor comes after the
 * idempotency interceptor and runs inside its transaction.
 */
export function WithDemoFaults(...faults: HandlerFault[]): MethodDecorator {
  if (!HANDLER_FAULT_HOOKS_ATTACHED) return () => undefined;
  return applyDecorators(
    SetMetadata(HANDLER_FAULTS, faults),
    UseInterceptors(DemoFaultsInterceptor),
  );
}

const requestFault = createParamDecorator(
  (_data: unknown, context: ExecutionContext) =>
    context.switchToHttp().getRequest<FaultyRequest>()[REQUEST_FAULT],
);

/**
 * The request's fault (undefined without one, or with faults off), for faults deep in a service.
 * With faults off the parameter is not bound at all and the handler gets undefined: a bound
 * custom parameter runs the global pipes on every request.
 */
export function DemoFault(): ParameterDecorator {
  return HANDLER_FAULT_HOOKS_ATTACHED ? requestFault() : () => undefined;
}
