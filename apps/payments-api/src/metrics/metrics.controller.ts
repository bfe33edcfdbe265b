import { Controller, Get, Header } from '@nestjs/common';
import { Public } from '../auth/public.decorator';
import { IdempotencyMetrics } from './idempotency-metrics';

@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: IdempotencyMetrics) {}

  /** Prometheus text format. */
  @Get()
  @Public()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
