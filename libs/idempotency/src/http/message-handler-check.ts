import { Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { controllerMethods, messagePatterns } from '../shared/controller-methods';
import { IDEMPOTENT_ROUTE } from './idempotency.constants';

/**
 * Refuses to start an app with `@Idempotent()` on a message handler. The interceptor makes HTTP
 * routes and GraphQL mutations safe to retry and lets anything else through untouched, so such a
 * handler would look protected and apply every redelivery again; so would a method that is a
 * route and a message handler at once, on its message path. A class-level `@Idempotent()` on a
 * controller that also handles messages stays allowed: it is meant for its routes.
 */
@Injectable()
export class MessageHandlerCheck {
  constructor(discovery: DiscoveryService) {
    for (const { metatype } of discovery.getControllers()) {
      if (typeof metatype !== 'function') continue;
      for (const [prototype, name, descriptor] of controllerMethods(metatype)) {
        const handler = descriptor.value as object;
        if (Reflect.getMetadata(IDEMPOTENT_ROUTE, handler) === undefined) continue;
        if (messagePatterns(handler) === undefined) continue;
        const owner = (prototype as { constructor: { name: string } }).constructor.name;
        throw new Error(
          `@Idempotent() on ${owner}.${name}, a message handler (@MessagePattern or @EventPattern): ` +
            'it covers HTTP routes and GraphQL mutations and would do nothing here, every ' +
            'redelivery applied again. Use @InboxHandler() from nestjs-pg-idempotency/messaging.',
        );
      }
    }
  }
}
