import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  ServiceUnavailableException,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { defer, lastValueFrom, type Observable } from 'rxjs';
import { CRASH_AFTER_COMMIT, DemoFaults, type FaultyRequest, REQUEST_FAULT } from './demo-faults';

/** Faults that act around a handler. */
export type HandlerFault =
  /** `delay=<ms>`: holds the claimed key open inside the transaction, before the handler. */
  | 'delay'
  /** `fail-transient`: fails after the handler wrote, so everything must roll back. */
  | 'fail-transient'
  /** `crash-after-commit`: armed here, fired by CrashAfterCommitInterceptor once committed. */
  | 'crash-after-commit';

export const HANDLER_FAULTS = Symbol('demo:handler-faults');

/**
 * Keeps the fault plumbing out of the business handlers (see `@WithDemoFaults()`). With faults
 * off, or no fault header, it hands on at once.
 */
@Injectable()
export class DemoFaultsInterceptor implements NestInterceptor {
  constructor(
    private readonly faults: DemoFaults,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FaultyRequest>();
    const fault = this.faults.fault(request);
    if (fault === undefined) return next.handle();
    request[REQUEST_FAULT] = fault;
    const honoured = this.reflector.get<HandlerFault[]>(HANDLER_FAULTS, context.getHandler()) ?? [];
    return defer(async () => {
      const delay = /^delay=(\d{1,6})$/.exec(fault);
      if (delay && honoured.includes('delay'))
        await new Promise((resolve) => setTimeout(resolve, Number(delay[1])));
      // Armed for a thrown error too: one the library stores (a declined card) commits as well.
      // CrashAfterCommitInterceptor fires only on an answer, so a released failure lives.
      if (fault === 'crash-after-commit' && honoured.includes('crash-after-commit'))
        request[CRASH_AFTER_COMMIT] = true;
      const result: unknown = await lastValueFrom(next.handle(), { defaultValue: undefined });
      if (fault === 'fail-transient' && honoured.includes('fail-transient')) {
        throw new ServiceUnavailableException(
          'Injected transient failure (X-Demo-Fault: fail-transient).',
        );
      }
      return result;
    });
  }
}
