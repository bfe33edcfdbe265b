import { Observable } from 'rxjs';
import type { Delivery } from './request-flow';

/** The value of a delivery, or its error thrown: past the flow's own error handling. */
export function unwrapDelivery(delivery: Delivery): unknown {
  if ('error' in delivery) throw delivery.error;
  return delivery.value;
}

/**
 * A delivery decided without I/O (a replay from the replay cache, a rejection), emitted in the
 * check phase of this turn of the event loop rather than at once: the answers to the requests a
 * turn reads then leave together after them, as the transactions' queries do
 * (`CoalescedWrites`). Under load a cached replay costs the app a seventh to a fifth less CPU so
 * (docs/benchmark.md); the wait is the rest of the turn, no timer. A subscriber gone before then
 * (a timeout around the route) cancels it.
 */
export function atCheckPhase(delivery: Delivery): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    const immediate = setImmediate(() => {
      let value: unknown;
      try {
        value = unwrapDelivery(delivery);
      } catch (error) {
        subscriber.error(error);
        return;
      }
      subscriber.next(value);
      subscriber.complete();
    });
    return () => clearImmediate(immediate);
  });
}
