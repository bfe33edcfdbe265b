import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';

/** What `GET /bench/stats` reports: totals since the process started. */
export interface BenchStats {
  /**
   * Queries sent to PostgreSQL by every connection of the process: round trips, since a query
   * may carry several statements (the library's START and COMMIT batches).
   */
  roundTrips: number;
  /** Requests received on the benchmarked routes (`POST /v1/orders`, `POST /bench/orders`). */
  requests: number;
  /** Of those, the ones whose handler (and idempotency work) has not finished yet. */
  inFlight: number;
  /** CPU time this process has used, user and system, in microseconds. */
  cpuMicroseconds: number;
}

/**
 * Counts, for the benchmark, what a request costs in round trips: the benchmark reads the totals
 * before and after a round and divides. The queries are counted where they leave the
 * process, in pg's `Client#query` (every TypeORM query and every statement of the library goes
 * through it), so the figure is measured, not taken from the README.
 */
@Injectable()
export class BenchStatsService implements OnModuleInit, OnModuleDestroy {
  private roundTrips = 0;
  private requests = 0;
  private inFlight = 0;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with apply(client) below
  private readonly originalQuery = Client.prototype.query;

  onModuleInit(): void {
    const original = this.originalQuery;
    const count = () => this.roundTrips++;
    // A prototype patch, because the pool creates its clients itself; only with BENCH_ROUTES=1.
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      count();
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
  }

  onModuleDestroy(): void {
    Client.prototype.query = this.originalQuery;
  }

  requestStarted(): void {
    this.requests++;
    this.inFlight++;
  }

  requestEnded(): void {
    this.inFlight--;
  }

  snapshot(): BenchStats {
    const cpu = process.cpuUsage();
    return {
      roundTrips: this.roundTrips,
      requests: this.requests,
      inFlight: this.inFlight,
      cpuMicroseconds: cpu.user + cpu.system,
    };
  }
}
