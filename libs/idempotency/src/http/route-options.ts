import type { Reflector } from '@nestjs/core';
import type { ClassSerializerContextOptions } from '@nestjs/common';
import { IDEMPOTENT_ROUTE } from './idempotency.constants';
import type { IdempotentOptions } from './idempotency.options';

// Where `@SerializeOptions()` keeps its options (Nest's ClassSerializerInterceptor reads it too).
const CLASS_SERIALIZER_OPTIONS = 'class_serializer:options';

/**
 * A route's `@Idempotent()` options, the method's merged over the class's, and its
 * `@SerializeOptions()` (for class instances the handler returns).
 */
export interface RouteOptions extends IdempotentOptions {
  required: boolean;
  phased: boolean;
  serializeOptions?: ClassSerializerContextOptions;
}

type Handler = (...args: never[]) => unknown;

// Decided once per (controller, handler): the metadata never changes after start-up. Keyed by
// the class too, because a subclass may inherit a handler and add a class-level decorator.
const resolved = new WeakMap<object, WeakMap<Handler, RouteOptions | null>>();

/**
 * Merges the options field by field: the method's over the class's (the module's fill the rest
 * where they are read). A route without either decorator gives `undefined`.
 */
export function routeOptions(
  reflector: Reflector,
  controller: object,
  handler: Handler,
): RouteOptions | undefined {
  let byHandler = resolved.get(controller);
  if (!byHandler) resolved.set(controller, (byHandler = new WeakMap()));
  let options = byHandler.get(handler);
  if (options === undefined) {
    options = mergeRouteOptions(
      reflector.get<IdempotentOptions | undefined>(IDEMPOTENT_ROUTE, controller as never),
      reflector.get<IdempotentOptions | undefined>(IDEMPOTENT_ROUTE, handler),
    );
    if (options) {
      options.serializeOptions = reflector.getAllAndOverride<
        ClassSerializerContextOptions | undefined
      >(CLASS_SERIALIZER_OPTIONS, [handler, controller as never]);
    }
    byHandler.set(handler, options);
  }
  return options ?? undefined;
}

function mergeRouteOptions(
  onClass: IdempotentOptions | undefined,
  onMethod: IdempotentOptions | undefined,
): RouteOptions | null {
  if (!onClass && !onMethod) return null;
  const merged: IdempotentOptions = { ...onClass };
  for (const [name, value] of Object.entries(onMethod ?? {})) {
    if (value !== undefined) (merged as Record<string, unknown>)[name] = value;
  }
  const phased = merged.phased === true;
  // A phased attempt must be resumable by its retry, which needs the key.
  return { ...merged, phased, required: phased || merged.required !== false };
}
