import { Controller, Get } from '@nestjs/common';
import { type BenchStats, BenchStatsService } from './bench-stats.service';

@Controller('bench/stats')
export class BenchStatsController {
  constructor(private readonly stats: BenchStatsService) {}

  @Get()
  read(): BenchStats {
    return this.stats.snapshot();
  }
}
