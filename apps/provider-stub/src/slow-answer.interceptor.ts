import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { delay, type Observable, of, mergeMap } from 'rxjs';

export const PROVIDER_FAULT_HEADER = 'x-provider-fault';

/**
 * `X-Provider-Fault: slow-answer=<ms>` (only with DEMO_FAULTS=1): the charge commits, then the
 * answer waits, so a caller with a shorter timeout loses it. Global, hence outside the
 * idempotency interceptor: the delay starts after the commit.
 */
@Injectable()
export class SlowAnswerInterceptor implements NestInterceptor {
  constructor(private readonly enabled: boolean) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const header = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined> }>().headers[PROVIDER_FAULT_HEADER];
    const match = this.enabled ? /^slow-answer=(\d{1,6})$/.exec(header ?? '') : null;
    if (!match) return next.handle();
    return next.handle().pipe(mergeMap((value) => of(value).pipe(delay(Number(match[1])))));
  }
}
