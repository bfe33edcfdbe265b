import { Module } from '@nestjs/common';
import { IdempotencyMetrics } from './idempotency-metrics';
import { MetricsController } from './metrics.controller';

@Module({
  controllers: [MetricsController],
  providers: [IdempotencyMetrics],
  exports: [IdempotencyMetrics],
})
export class MetricsModule {}
