import { Observable } from 'rxjs';
import type { Delivery } from './request-flow';

/** The value of a delivery, or its error thrown: past the flow's own error handling. */
function unwrapDelivery(delivery: Delivery): unknown {
  if ('error' in delivery) throw delivery.error;
  return delivery.value;
}

/**
 * A delivery emitted in the check phase of the event loop's turn that decided it, rather than
 * at once: the answers of a turn then leave together after its reads and replies, as the
 * transactions' queries do (`CoalescedWrites`). Under load a replay from the replay cache costs
 * the app a seventh to a fifth less CPU so, a replay from the database 6 to 8% less, a create
 * the same (docs/benchmark.md); the wait is the rest of the turn, no timer. A subscriber
 * gone before then (a timeout around the route) cancels it.
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
