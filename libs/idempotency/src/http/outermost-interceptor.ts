import type { NestInterceptor, Type } from '@nestjs/common';
import type { ApplicationConfig, Reflector } from '@nestjs/core';
import { ClsInterceptor } from 'nestjs-cls';
import { PerAppRoute } from './per-app-route';

// Nest's metadata keys (the same in Nest 11 and 12; not exported from either root).
const INTERCEPTORS_METADATA = '__interceptors__';
const REDIRECT_METADATA = '__redirect__';
const RENDER_METADATA = '__renderTemplate__';
const SSE_METADATA = '__sse__';

type Handler = (...args: never[]) => unknown;

/** Interceptors as Nest lists them: classes (`@UseInterceptors(X)`) or instances. */
type InterceptorEntry = Type<NestInterceptor> | NestInterceptor;

const decided = new PerAppRoute<boolean>();

/**
 * Whether `ours` is the first interceptor Nest runs on this route, and the router sends what it
 * returns as the response body: no global, class-level or earlier method-level interceptor
 * around it but an instance of nestjs-cls's `ClsInterceptor` (which hands the value on untouched), no
 * `@Redirect()`, `@Render()` or `@Sse()`. Then nothing between it and the wire needs a value, so
 * a stored JSON body can go out as its bytes, without a parse and a second serialisation. Nest
 * builds a route's chain in this order: the globals (request-scoped ones included), the class's,
 * the method's (`InterceptorsContextCreator`). Any other interceptor in front, even one that
 * does nothing (`ClsModule.forRoot` registers such a global when its interceptor is not
 * mounted), keeps the value: what it does with one cannot be known.
 */
export function isOutermostInterceptor(
  config: ApplicationConfig | undefined,
  reflector: Reflector,
  controller: Type<unknown>,
  handler: Handler,
  ours: Type<NestInterceptor>,
): boolean {
  if (config === undefined) return false;
  return decided.resolve(config, controller, handler, () =>
    decide(config, reflector, controller, handler, ours),
  );
}

function decide(
  config: ApplicationConfig,
  reflector: Reflector,
  controller: Type<unknown>,
  handler: Handler,
  ours: Type<NestInterceptor>,
): boolean {
  if ([REDIRECT_METADATA, RENDER_METADATA, SSE_METADATA].some((key) => reflector.get(key, handler)))
    return false;
  // A request-scoped global runs first, and is no instance yet to compare with ours.
  if (config.getGlobalRequestInterceptors().length > 0) return false;
  const chain = interceptorChain(config, reflector, controller, handler);
  const first = chain.find((entry) => !isExactly(entry, ClsInterceptor));
  return first !== undefined && isExactly(first, ours);
}

/**
 * The interceptors Nest runs on a route, outermost first: the globals (singletons; request-scoped
 * ones are not instances yet), the class's, the method's (`InterceptorsContextCreator`).
 */
export function interceptorChain(
  config: ApplicationConfig,
  reflector: Reflector,
  controller: Type<unknown>,
  handler: Handler,
): InterceptorEntry[] {
  return [
    ...config.getGlobalInterceptors(),
    ...(reflector.get<InterceptorEntry[] | undefined>(INTERCEPTORS_METADATA, controller) ?? []),
    ...(reflector.get<InterceptorEntry[] | undefined>(INTERCEPTORS_METADATA, handler) ?? []),
  ];
}

/**
 * `entry` is `type` or an instance of it, not of a subclass: a subclass may override
 * `intercept` and map the value it hands on.
 */
function isExactly(entry: InterceptorEntry, type: Type<NestInterceptor>): boolean {
  return typeof entry === 'function'
    ? entry === type
    : Object.getPrototypeOf(entry) === type.prototype;
}
