import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  controllerMethods,
  messagePatterns,
  messageTransport,
} from '../../shared/controller-methods';
import { INBOX_HANDLER } from '../messaging.constants';
import type { InboxHandlerMetadata } from './inbox-handler.options';

interface InboxHandlerSite {
  /** `Controller.method`. */
  name: string;
  /** The module that declares the controller, which tells one controller declared twice apart. */
  module: string | undefined;
  consumer: string;
  transport: unknown;
}

/**
 * Refuses to start an app with two `@InboxHandler()` methods on one message pattern (or one
 * method Nest registers twice: inherited by two controllers, or declared by two modules). Nest runs
 * every event handler of a pattern for each message (and only the last message handler), and
 * each inbox handler settles the delivery: the second ack or retry of one delivery tag makes the
 * broker close the channel, and a retry asked for by one consumer is lost when the other acks.
 * Handlers on two transports do not meet.
 */
@Injectable()
export class InboxHandlerCheck {
  constructor(discovery: DiscoveryService) {
    const byPattern = new Map<string, InboxHandlerSite[]>();
    for (const wrapper of discovery.getControllers()) {
      const { metatype } = wrapper;
      if (typeof metatype !== 'function') continue;
      const module = (wrapper as { host?: { name?: string } }).host?.name;
      for (const [, name, descriptor] of controllerMethods(metatype)) {
        const handler = descriptor.value as object;
        const inbox = Reflect.getMetadata(INBOX_HANDLER, handler) as
          InboxHandlerMetadata | undefined;
        const patterns = messagePatterns(handler);
        if (!inbox || !patterns) continue;
        const site: InboxHandlerSite = {
          name: `${metatype.name}.${name}`,
          module,
          consumer: inbox.consumer,
          transport: messageTransport(handler),
        };
        for (const pattern of patterns) {
          const key = patternKey(pattern);
          const sites = byPattern.get(key) ?? [];
          // Nest adds a handler once per controller instance: a method two controllers inherit,
          // or one controller declared by two modules, runs twice for each message too.
          const other = sites.find((each) => meet(each, site));
          if (other) refuse(other, site, key);
          byPattern.set(key, [...sites, site]);
        }
      }
    }
  }
}

function meet(one: InboxHandlerSite, other: InboxHandlerSite): boolean {
  return (
    one.transport === undefined ||
    other.transport === undefined ||
    one.transport === other.transport
  );
}

function refuse(one: InboxHandlerSite, other: InboxHandlerSite, pattern: string): never {
  const where = (site: InboxHandlerSite) =>
    one.name === other.name && site.module ? `${site.name} in ${site.module}` : site.name;
  throw new Error(
    `@InboxHandler() on ${where(one)} ('${one.consumer}') and on ${where(other)} ('${other.consumer}') ` +
      `handle one message pattern, ${pattern}: Nest runs both for each event, each settling the ` +
      'same delivery (the broker closes the channel on the second ack), and of two request ' +
      'handlers it keeps only the last. Give each consumer a pattern of its own, or apply both ' +
      'effects in one handler.',
  );
}

/** The pattern as Nest routes it: objects by their keys in order, whatever order they were written in. */
function patternKey(pattern: unknown): string {
  return JSON.stringify(sortedKeys(pattern));
}

function sortedKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}
