import { type CallHandler, Injectable, type NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';

/**
 * Hands every request on at once: what Nest itself costs a route for having one interceptor
 * around its handler (on Nest 11, two `AsyncResource.bind` calls and the router's observable
 * plumbing). Any interceptor-based idempotency library pays this on a create; the benchmark
 * reads the library's own share of a create above it.
 */
@Injectable()
export class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}
