import { Observable, type Subscriber } from 'rxjs';
import type { Delivery } from './request-flow';

/**
 * The delivery that `decide` makes, emitted in the check phase of the event loop's turn that
 * decided it rather than at once: the answers of a turn then leave together after its reads
 * and replies, as the transactions' queries do (`CoalescedWrites`). Under load a replay from
 * the replay cache costs the app a seventh to a fifth less CPU so, a replay from the database
 * 6 to 8% less, a create the same (docs/benchmark.md); the wait is the rest of the turn, no
 * timer.
 *
 * `decide` runs when the observable is subscribed to, as under rxjs's `defer`; it may return
 * the delivery or a promise of it. A subscriber gone before the emission (a timeout around the
 * route) cancels it. One observable and one `setImmediate` per request, where `defer`, `from`
 * and `mergeMap` made three observables and their subscribers.
 */
export function atCheckPhase(decide: () => Delivery | Promise<Delivery>): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    let immediate: NodeJS.Immediate | undefined;
    const schedule = (delivery: Delivery): void => {
      // Gone while the promise was pending: nothing to send, nothing to schedule.
      if (!subscriber.closed) immediate = setImmediate(emit, subscriber, delivery);
    };
    const delivery = decide();
    if (delivery instanceof Promise) {
      delivery.then(schedule, (error: unknown) => subscriber.error(error));
    } else {
      schedule(delivery);
    }
    return () => {
      if (immediate !== undefined) clearImmediate(immediate);
    };
  });
}

/** The value of a delivery to the subscriber, or its error: past the flow's own error handling. */
function emit(subscriber: Subscriber<unknown>, delivery: Delivery): void {
  if ('error' in delivery) {
    subscriber.error(delivery.error);
    return;
  }
  subscriber.next(delivery.value);
  subscriber.complete();
}
