import { Injectable } from '@nestjs/common';
import type { StoredResponse } from '../idempotency.options';

/** How an attempt on a key ended, as far as its duplicates in this process need to know. */
export type Landing =
  /** Its outcome is committed: a duplicate with the same fingerprint replays it. */
  | { committed: true; requestHash: string; response: StoredResponse }
  /** It released the key (or never held it): a duplicate may claim the key itself. */
  | { committed: false };

/** The attempt that holds a key in this process; it must land exactly once. */
export interface Flight {
  land(landing: Landing): void;
}

/** A running attempt; its promise is made only when a duplicate waits for it. */
interface Attempt {
  landing?: Promise<Landing>;
  land?: (landing: Landing) => void;
}

/**
 * The keys whose first attempt is running in this process. A duplicate of such a key waits here,
 * in memory, instead of on the twin's row lock in PostgreSQL: a lock wait holds a pooled
 * connection for its whole length, and a hundred retries of one slow request would starve every
 * other request of connections. Only duplicates from other processes meet the row lock.
 * This decides nothing the claim does not: whoever leads still claims the key in the database.
 */
@Injectable()
export class InFlightKeys {
  private readonly flights = new Map<string, Attempt>();

  /** Keys with an attempt running in this process. */
  get size(): number {
    return this.flights.size;
  }

  /** Leads the key (a `Flight` to land), or gives the running twin's landing to wait for. */
  take(identity: string): { flight: Flight } | { twin: Promise<Landing> } {
    const running = this.flights.get(identity);
    if (running) {
      running.landing ??= new Promise<Landing>((resolve) => (running.land = resolve));
      return { twin: running.landing };
    }
    const attempt: Attempt = {};
    this.flights.set(identity, attempt);
    return { flight: new AttemptFlight(this.flights, identity, attempt) };
  }

  /** The twin's landing, or `undefined` when `ms` pass first. */
  static async waitAtMost(twin: Promise<Landing>, ms: number): Promise<Landing | undefined> {
    if (ms <= 0) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), ms)),
    );
    try {
      return await Promise.race([twin, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Lands once: removes the key and wakes the duplicates that wait, if any. */
class AttemptFlight implements Flight {
  private landed = false;

  constructor(
    private readonly flights: Map<string, Attempt>,
    private readonly identity: string,
    private readonly attempt: Attempt,
  ) {}

  land(landing: Landing): void {
    if (this.landed) return;
    this.landed = true;
    this.flights.delete(this.identity);
    this.attempt.land?.(landing);
  }
}
