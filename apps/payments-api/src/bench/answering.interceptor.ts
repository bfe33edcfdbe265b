import { Injectable, type NestInterceptor } from '@nestjs/common';
import { type Observable, of } from 'rxjs';
import { BARE_ANSWER } from './bare-answer';

/**
 * Answers every request itself, from memory, without calling the handler: what Nest costs a
 * route whose interceptor answers in the handler's place, as a replay from memory does. Any
 * interceptor-based library pays this on a replay; the benchmark reads the library's own share
 * of a cached replay above it.
 */
@Injectable()
export class AnsweringInterceptor implements NestInterceptor {
  intercept(): Observable<unknown> {
    return of(BARE_ANSWER);
  }
}
