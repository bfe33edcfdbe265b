import { ClassSerializerInterceptor, type Type } from '@nestjs/common';
import type { ApplicationConfig, Reflector } from '@nestjs/core';
import { interceptorChain } from './outermost-interceptor';
import { PerAppRoute } from './per-app-route';
import type { RouteOptions } from './route-options';

type Handler = (...args: never[]) => unknown;

const resolved = new PerAppRoute<RouteOptions>();

/**
 * The route's options with what its `ClassSerializerInterceptor` would serialise a result with:
 * the defaults it was built with (`new ClassSerializerInterceptor(reflector, { … })`), the
 * route's `@SerializeOptions()` over them, as the interceptor merges them. The stored response
 * is serialised so, or a field the app's serializer hides (`excludeExtraneousValues`, a group)
 * would be stored, and sent: the interceptor then gets plain data, which it leaves as it is.
 * The serializer nearest the handler counts (it sees the result first); the others see plain
 * data. `route` itself where there is none, or it has no defaults.
 */
export function withSerializerDefaults(
  config: ApplicationConfig | undefined,
  reflector: Reflector,
  controller: Type<unknown>,
  handler: Handler,
  route: RouteOptions,
): RouteOptions {
  if (config === undefined) return route;
  return resolved.resolve(config, controller, handler, () =>
    merged(config, reflector, controller, handler, route),
  );
}

function merged(
  config: ApplicationConfig,
  reflector: Reflector,
  controller: Type<unknown>,
  handler: Handler,
  route: RouteOptions,
): RouteOptions {
  const serializer = interceptorChain(config, reflector, controller, handler)
    .filter((entry) => entry instanceof ClassSerializerInterceptor)
    .at(-1);
  // `defaultOptions` is protected: the options the app gave the interceptor's constructor.
  const { transformerPackage: _ignored, ...defaults } =
    (serializer as unknown as { defaultOptions?: Record<string, unknown> } | undefined)
      ?.defaultOptions ?? {};
  if (Object.keys(defaults).length === 0) return route;
  return { ...route, serializeOptions: { ...defaults, ...route.serializeOptions } };
}
