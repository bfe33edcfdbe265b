import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { IDEMPOTENCY_DIAGNOSTICS_CHANNEL, type IdempotencyEvent } from 'nestjs-pg-idempotency';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** A counter's and a histogram's children for one set of labels. */
interface RequestSeries {
  count: { inc(): void };
  seconds: { observe(value: number): void };
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * The library's events, turned into Prometheus series. They arrive on the library's
 * `node:diagnostics_channel` channel, the way an APM agent would take them: the app's module
 * options need no hook for it. The channel is process-wide, so this instance listens only while
 * its app lives.
 */
@Injectable()
export class IdempotencyMetrics implements OnModuleDestroy {
  readonly registry = new Registry();

  private readonly outcomes = new Counter({
    name: 'idempotency_requests_total',
    help: 'Idempotent requests by scope and outcome (completed, replayed, stored_failure, released, in_progress, lock_timeout, fingerprint_mismatch, rejected_key, unfingerprintable_request, unreadable_record)',
    labelNames: ['scope', 'outcome'],
    registers: [this.registry],
  });

  private readonly claims = new Counter({
    name: 'idempotency_claims_total',
    help: 'Keys claimed (the handler ran), by scope and mode',
    labelNames: ['scope', 'mode'],
    registers: [this.registry],
  });

  private readonly claimSeconds = new Histogram({
    name: 'idempotency_claim_duration_seconds',
    help: 'Time of the claim statement(s), by scope and mode',
    labelNames: ['scope', 'mode'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly requestSeconds = new Histogram({
    name: 'idempotency_request_duration_seconds',
    help: 'Time of the whole request through the library, by scope and outcome',
    labelNames: ['scope', 'outcome'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly expiredRemoved = new Counter({
    name: 'idempotency_expired_removed_total',
    help: 'Expired keys deleted by the cleanup',
    registers: [this.registry],
  });

  private readonly writesOutside = new Counter({
    name: 'idempotency_writes_outside_transaction_total',
    help: "TypeORM writes outside the request's transaction seen by the write guard, by scope and entity",
    labelNames: ['scope', 'entity'],
    registers: [this.registry],
  });

  private readonly uncertainSteps = new Counter({
    name: 'idempotency_uncertain_steps_total',
    help: 'Phased external steps a resumed attempt found started but unrecorded, by scope and step',
    labelNames: ['scope', 'step'],
    registers: [this.registry],
  });

  private readonly reconciledSteps = new Counter({
    name: 'idempotency_reconciled_steps_total',
    help: 'Uncertain steps reconciled, by scope, step and whether the outcome was found (found: the call was not made again)',
    labelNames: ['scope', 'step', 'found'],
    registers: [this.registry],
  });

  private readonly claimSeries = new Map<string, RequestSeries>();
  private readonly outcomeSeries = new Map<string, RequestSeries>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    subscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, this.onMessage);
  }

  onModuleDestroy(): void {
    unsubscribe(IDEMPOTENCY_DIAGNOSTICS_CHANNEL, this.onMessage);
  }

  // The channel's messages are typed unknown; the library publishes IdempotencyEvents only.
  private readonly onMessage = (message: unknown): void => this.record(message as IdempotencyEvent);

  private record(event: IdempotencyEvent): void {
    const scope = event.scope ?? 'unknown';
    switch (event.type) {
      case 'expired_removed':
        this.expiredRemoved.inc(event.count ?? 0);
        return;
      // Not an outcome: the request it belongs to reports one of its own (`released`).
      case 'write_outside_transaction':
        this.writesOutside.inc({ scope, entity: event.entity ?? 'unknown' });
        return;
      // Steps of a request, not its outcome.
      case 'step_uncertain':
        this.uncertainSteps.inc({ scope, step: event.step ?? 'unknown' });
        return;
      case 'step_reconciled':
        this.reconciledSteps.inc({
          scope,
          step: event.step ?? 'unknown',
          found: String(event.found ?? false),
        });
        return;
      case 'claimed': {
        const mode = event.mode ?? 'atomic';
        const series = this.seriesOf(this.claimSeries, `${scope}\u0000${mode}`, () => ({
          count: this.claims.labels({ scope, mode }),
          seconds: this.claimSeconds.labels({ scope, mode }),
        }));
        series.count.inc();
        if (event.claimMs !== undefined) series.seconds.observe(event.claimMs / 1000);
        return;
      }
      default: {
        const outcome = event.type;
        const series = this.seriesOf(this.outcomeSeries, `${scope}\u0000${outcome}`, () => ({
          count: this.outcomes.labels({ scope, outcome }),
          seconds: this.requestSeconds.labels({ scope, outcome }),
        }));
        series.count.inc();
        if (event.durationMs !== undefined) series.seconds.observe(event.durationMs / 1000);
      }
    }
  }

  /**
   * The labelled children of a request's series, found once per label set: every request
   * records two to four samples, and prom-client would otherwise hash the labels of each again.
   */
  private seriesOf(
    cache: Map<string, RequestSeries>,
    name: string,
    create: () => RequestSeries,
  ): RequestSeries {
    let series = cache.get(name);
    if (!series) cache.set(name, (series = create()));
    return series;
  }
}
