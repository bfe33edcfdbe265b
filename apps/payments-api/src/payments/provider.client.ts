import {
  GatewayTimeoutException,
  Inject,
  Injectable,
  ServiceUnavailableException,
} from '@nestjs/common';
import type { IdempotentPhases } from 'nestjs-pg-idempotency';
import { APP_CONFIG, type AppConfig } from '../app.config';

export interface ChargeRequest {
  amountCents: number;
  currency: string;
  /** Our payment id: lets the provider's records be reconciled with ours. */
  reference: string;
}

/** What the provider decided; both outcomes are final and recorded as a recovery point. */
export type ChargeOutcome =
  | { status: 'succeeded'; chargeId: string }
  | { status: 'declined'; problem: Record<string, unknown> };

/** The step name the charge's downstream key is derived from. */
export const CHARGE_STEP = 'charge-card';

// Under the provider-timeout fault: the provider holds its answer longer than we wait.
const FAULT_TIMEOUT_MS = 500;
const FAULT_SLOW_ANSWER_MS = 1500;

@Injectable()
export class ProviderClient {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /**
   * POST /charges under `childKey(key, 'charge-card')`: a retried payment sends the same key, so
   * the provider replays its first answer instead of charging again.
   */
  async charge(
    phases: IdempotentPhases,
    charge: ChargeRequest,
    options: { loseAnswer: boolean },
  ): Promise<ChargeOutcome> {
    let response: Response;
    try {
      response = await phases.fetch(CHARGE_STEP, `${this.config.providerUrl}/charges`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(options.loseAnswer
            ? { 'x-provider-fault': `slow-answer=${FAULT_SLOW_ANSWER_MS}` }
            : {}),
        },
        body: JSON.stringify(charge),
        timeoutMs: options.loseAnswer ? FAULT_TIMEOUT_MS : this.config.providerTimeoutMs,
      });
    } catch (error) {
      // Timed out or unreachable: the charge may or may not exist. Transient: the retry asks
      // again under the same key and learns which.
      if ((error as Error).name === 'TimeoutError') {
        throw new GatewayTimeoutException(
          'The card processor did not answer in time. Retry with the same key.',
        );
      }
      throw new ServiceUnavailableException(
        'The card processor is unreachable. Retry with the same key.',
      );
    }
    const body = (await response.json()) as Record<string, unknown>;
    if (response.status === 201) return { status: 'succeeded', chargeId: String(body.id) };
    if (response.status === 402) return { status: 'declined', problem: body };
    // 409 (our earlier attempt still running there), 5xx: transient, retry later.
    throw new ServiceUnavailableException(
      `The card processor answered ${response.status}. Retry with the same key.`,
    );
  }

  /**
   * The charge the provider holds for `reference` (our payment id), if any: how a retry learns
   * the outcome of a charge whose answer was lost, from a provider that may ignore our key.
   * Only successful charges are on record there; a decline is found by charging again.
   */
  async findCharge(reference: string): Promise<ChargeOutcome | undefined> {
    const url = new URL(`${this.config.providerUrl}/charges`);
    url.searchParams.set('reference', reference);
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.timeout(this.config.providerTimeoutMs) });
    } catch {
      throw new ServiceUnavailableException(
        'The card processor could not be asked about an earlier charge. Retry with the same key.',
      );
    }
    if (response.status !== 200) {
      throw new ServiceUnavailableException(
        `The card processor answered ${response.status} to a charge lookup. Retry with the same key.`,
      );
    }
    const [charge] = (await response.json()) as { id: string; status: string }[];
    return charge?.status === 'succeeded'
      ? { status: 'succeeded', chargeId: charge.id }
      : undefined;
  }
}
