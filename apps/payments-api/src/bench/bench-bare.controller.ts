import { Controller, HttpCode, Post } from '@nestjs/common';

/** What the bare route answers: an order-sized JSON body, the same on every request. */
const BARE_ANSWER = {
  id: '00000000-0000-4000-8000-000000000000',
  customerId: 'cus-bench',
  amountCents: 1250,
  currency: 'usd',
  reference: null,
  status: 'pending',
  createdAt: '2026-01-01T00:00:00.000Z',
  paidCents: 0,
};

/**
 * `POST /bench/bare`, the floor of the benchmark: a Nest route behind the demo's API-key guard
 * (global, as on every route) that touches no database and no service. A replay answered from
 * the replay cache is held against it: both do no I/O, so what a replay costs above it is the
 * library's own work per request.
 */
@Controller('bench/bare')
export class BenchBareController {
  @Post()
  @HttpCode(201)
  create(): typeof BARE_ANSWER {
    return BARE_ANSWER;
  }
}
