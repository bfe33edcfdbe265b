import { Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, Server } from 'node:http';
import { PerformanceObserver } from 'node:perf_hooks';
import { Client, type Pool } from 'pg';
import { DataSource } from 'typeorm';

/** What `GET /bench/stats` reports: totals since the process started. */
export interface BenchStats {
  /**
   * Queries sent to PostgreSQL by every connection of the process: round trips, since a query
   * may carry several statements (the library's START and COMMIT batches).
   */
  roundTrips: number;
  /** Requests received on the benchmarked routes (`POST /v1/orders`, `POST /bench/...`). */
  requests: number;
  /**
   * Pool connections checked out, or waited for: a request between its first statement and
   * its COMMIT holds one, even when its client hung up (autocannon does, at the end of a run).
   */
  busyConnections: number;
  /** CPU time this process has used, user and system, in microseconds. */
  cpuMicroseconds: number;
  /** Of `cpuMicroseconds`, the time in the kernel (system calls: sockets, wake-ups). */
  systemCpuMicroseconds: number;
  /**
   * Time the garbage collector's pauses took since the start of the benchmark routes, in
   * microseconds: a request's garbage is paid for here, later, by whichever request runs then.
   */
  gcMicroseconds: number;
}

/** The routes whose requests are counted; the stats route itself is not one of them. */
const BENCHMARKED_PATHS = ['/v1/orders', '/bench/orders', '/bench/bare', '/bench/peer/'];

/**
 * Counts, for the benchmark, what a request costs in round trips: the benchmark reads the totals
 * before and after a round and divides. The queries are counted where they leave the
 * process, in pg's `Client#query` (every TypeORM query and every statement of the library goes
 * through it), so the figure is measured, not taken from the README. Requests are counted by
 * a listener on the HTTP server, not by an interceptor: a global interceptor would add its own
 * cost to every request it measures.
 */
@Injectable()
export class BenchStatsService implements OnApplicationBootstrap, OnModuleDestroy {
  private roundTrips = 0;
  private requests = 0;
  private gcMicroseconds = 0;
  private readonly gcPauses = new PerformanceObserver((entries) => {
    for (const entry of entries.getEntries()) this.gcMicroseconds += entry.duration * 1000;
  });
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with apply(client) below
  private readonly originalQuery = Client.prototype.query;
  private server?: Server;
  private readonly countRequest = (request: IncomingMessage) => {
    const url = request.url ?? '';
    if (request.method === 'POST' && BENCHMARKED_PATHS.some((path) => url.startsWith(path)))
      this.requests++;
  };

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly dataSource: DataSource,
  ) {}

  onApplicationBootstrap(): void {
    const original = this.originalQuery;
    const count = () => this.roundTrips++;
    // A prototype patch, because the pool creates its clients itself; only with BENCH_ROUTES=1.
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      count();
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
    this.server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    this.server.on('request', this.countRequest);
    this.gcPauses.observe({ entryTypes: ['gc'] });
  }

  onModuleDestroy(): void {
    this.gcPauses.disconnect();
    Client.prototype.query = this.originalQuery;
    this.server?.off('request', this.countRequest);
  }

  snapshot(): BenchStats {
    const cpu = process.cpuUsage();
    // TypeORM's PostgresDriver keeps its pg Pool as `master`.
    const pool = (this.dataSource.driver as unknown as { master: Pool }).master;
    return {
      roundTrips: this.roundTrips,
      requests: this.requests,
      busyConnections: pool.totalCount - pool.idleCount + pool.waitingCount,
      cpuMicroseconds: cpu.user + cpu.system,
      systemCpuMicroseconds: cpu.system,
      gcMicroseconds: Math.round(this.gcMicroseconds),
    };
  }
}
