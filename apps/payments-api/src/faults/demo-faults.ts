import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../app.config';

export const FAULT_HEADER = 'x-demo-fault';

/** A request the handler ran (not a replay) that asked to die once its commit is done. */
export const CRASH_AFTER_COMMIT = Symbol('demo:crash-after-commit');

/** Where the faults interceptor leaves the request's fault for `@DemoFault()`. */
export const REQUEST_FAULT = Symbol('demo:fault');

export interface FaultyRequest {
  headers: Record<string, string | string[] | undefined>;
  [CRASH_AFTER_COMMIT]?: boolean;
  [REQUEST_FAULT]?: string;
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

/** The faults of a payment request: where in its phases it should fail. */
export function paymentFaults(fault: string | undefined): PaymentFaults {
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
export function eventFaultHeaders(fault: string | undefined): Record<string, string> {
  return fault === 'crash-after-publish' ? { [FAULT_HEADER]: 'crash-after-publish' } : {};
}

/**
 * Fault injection for the tests, on `X-Demo-Fault`, only with `DEMO_FAULTS=1`. The header is
 * never part of the fingerprint, so a retry without it replays the faulted request.
 */
@Injectable()
export class DemoFaults {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The request's fault; always undefined unless faults are on. */
  fault(request: FaultyRequest): string | undefined {
    if (!this.config.demoFaults) return undefined;
    const value = request.headers[FAULT_HEADER];
    return Array.isArray(value) ? value[0] : value;
  }
}
