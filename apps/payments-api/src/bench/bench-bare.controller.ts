import { Controller, HttpCode, Post, UseInterceptors } from '@nestjs/common';
import { AnsweringInterceptor } from './answering.interceptor';
import { BARE_ANSWER } from './bare-answer';

/**
 * `POST /bench/bare`, the floor of the benchmark: a Nest route behind the demo's API-key guard
 * (global, as on every route) that touches no database and no service. A replay answered from
 * the replay cache is held against it: both do no I/O, so what a replay costs above it is the
 * library's own work per request, plus what Nest charges for an interceptor.
 *
 * `POST /bench/bare/answered` measures that charge alone: the same route, answered by an
 * interceptor that does nothing else.
 */
@Controller('bench/bare')
export class BenchBareController {
  @Post()
  @HttpCode(201)
  create(): typeof BARE_ANSWER {
    return BARE_ANSWER;
  }

  @Post('answered')
  @HttpCode(201)
  @UseInterceptors(AnsweringInterceptor)
  answered(): typeof BARE_ANSWER {
    // Never reached: the interceptor answers first.
    return BARE_ANSWER;
  }
}
