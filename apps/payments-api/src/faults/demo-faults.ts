import { Inject, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../app.config';

export const FAULT_HEADER = 'x-demo-fault';

/** A request the handler ran (not a replay) that asked to die once its commit is done. */
export const CRASH_AFTER_COMMIT = Symbol('demo:crash-after-commit');

interface FaultyRequest {
  headers: Record<string, string | string[] | undefined>;
  [CRASH_AFTER_COMMIT]?: boolean;
}

export interface PaymentFaults {
  /** Die right after the `created` recovery point commits. */
  crashBeforeCharge: boolean;
  /** Die after the provider charged, before the charge is recorded. */
  crashAfterCharge: boolean;
  /** The provider commits the charge, but its answer comes after our timeout. */
  providerTimeout: boolean;
}

/** Dies at once, like `kill -9`: no shutdown hook, no response, no rollback of what committed. */
export function crashNow(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

/**
 * Fault injection for the tests, on `X-Demo-Fault`, only with `DEMO_FAULTS=1`. The header is
 * never part of the fingerprint, so a retry without it replays the faulted request.
 */
@Injectable()
export class DemoFaults {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** `delay=<ms>`: holds the claimed key open inside the transaction. */
  async delayIfAsked(request: FaultyRequest): Promise<void> {
    const match = /^delay=(\d{1,6})$/.exec(this.fault(request) ?? '');
    if (match) await new Promise((resolve) => setTimeout(resolve, Number(match[1])));
  }

  /** `fail-transient`: fails after the handler wrote, so everything must roll back. */
  failIfAsked(request: FaultyRequest): void {
    if (this.fault(request) === 'fail-transient') {
      throw new ServiceUnavailableException('Injected transient failure (X-Demo-Fault: fail-transient).');
    }
  }

  /** `crash-after-commit`: armed by the handler, fired by CrashAfterCommitInterceptor. */
  armCrashAfterCommit(request: FaultyRequest): void {
    if (this.fault(request) === 'crash-after-commit') request[CRASH_AFTER_COMMIT] = true;
  }

  /** The faults of a payment request: where in its phases it should fail. */
  paymentFaults(request: FaultyRequest): PaymentFaults {
    const fault = this.fault(request);
    return {
      crashBeforeCharge: fault === 'crash-before-charge',
      crashAfterCharge: fault === 'crash-after-charge',
      providerTimeout: fault === 'provider-timeout',
    };
  }

  /**
   * `crash-after-publish`: carried on the order's outgoing event as the `x-demo-fault` message
   * header, where the relay acts on it (see MessageFaults).
   */
  eventHeaders(request: FaultyRequest): Record<string, string> {
    return this.fault(request) === 'crash-after-publish' ? { [FAULT_HEADER]: 'crash-after-publish' } : {};
  }

  private fault(request: FaultyRequest): string | undefined {
    if (!this.config.demoFaults) return undefined;
    const value = request.headers[FAULT_HEADER];
    return Array.isArray(value) ? value[0] : value;
  }
}
