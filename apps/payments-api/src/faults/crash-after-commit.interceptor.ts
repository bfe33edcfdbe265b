import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { type Observable, tap } from 'rxjs';
import { CRASH_AFTER_COMMIT } from './demo-faults';

/**
 * Global, so it wraps the route's idempotency interceptor: it sees the result after the
 * transaction committed and before the router writes a byte, the window a lost response
 * falls into.
 */
@Injectable()
export class CrashAfterCommitInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle(); // message handlers have their own faults
    const request = context.switchToHttp().getRequest<{ [CRASH_AFTER_COMMIT]?: boolean }>();
    return next.handle().pipe(
      tap(() => {
        if (request[CRASH_AFTER_COMMIT]) process.kill(process.pid, 'SIGKILL');
      }),
    );
  }
}
