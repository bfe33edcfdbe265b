import { Inject, Injectable } from '@nestjs/common';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import type { StoredResponse } from '../idempotency.options';
import type { KeyId } from '../key-id';
import { keyIdentity } from './key-identity';

interface CachedOutcome {
  requestHash: string;
  /** The text of a request the outcome answers (`verbatimRequest`), if known. */
  verbatim?: string;
  response: StoredResponse;
  /** Epoch ms after which the entry is not used (never later than the row's expiry). */
  usableUntil: number;
}

/**
 * Completed keys, kept in process memory for replays without a database round trip. A
 * completed row never changes until it expires, so a copy is as good as the row: the cache
 * decides nothing a claim decides (which request runs), it only answers retries of an outcome
 * already committed. Entries end with the row's expiry (or `maxAgeSeconds`, whichever is first),
 * and the least recently used go first beyond `maxEntries`.
 */
@Injectable()
export class CompletedResponseCache {
  private readonly entries = new Map<string, CachedOutcome>();

  constructor(@Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions) {}

  get(id: KeyId): CachedOutcome | undefined {
    const name = keyIdentity(id);
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    this.entries.delete(name);
    if (entry.usableUntil <= Date.now()) return undefined;
    this.entries.set(name, entry); // most recently used goes last
    return entry;
  }

  /**
   * Whether `entry` answers `request`: the same text as the request it was stored for, or else
   * the same fingerprint (a body in another key order, a default left out).
   */
  static answers(
    entry: CachedOutcome,
    request: { verbatim?: string; requestHash: string },
  ): boolean {
    return (
      (entry.verbatim !== undefined && entry.verbatim === request.verbatim) ||
      entry.requestHash === request.requestHash
    );
  }

  /**
   * `expiresInMs`: what the row has left to live, as the database counts it. `verbatim`: the
   * text of a request with this fingerprint, for retries that send the same one.
   */
  set(
    id: KeyId,
    requestHash: string,
    response: StoredResponse,
    expiresInMs: number,
    verbatim?: string,
  ): void {
    const { enabled, maxEntries, maxAgeSeconds, maxBodyBytes } = this.options.replayCache;
    if (!enabled || response.body.length > maxBodyBytes) return;
    // A second off the row's expiry covers the clocks of this process and the database.
    const lifetime = Math.min(expiresInMs - 1000, maxAgeSeconds * 1000);
    if (lifetime <= 0) return;
    const name = keyIdentity(id);
    this.entries.delete(name);
    this.entries.set(name, {
      requestHash,
      verbatim,
      response,
      usableUntil: Date.now() + lifetime,
    });
    while (this.entries.size > maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}
