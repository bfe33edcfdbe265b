import { plainToInstance } from 'class-transformer';
import { assertFingerprintable, MAX_BODY_DEPTH } from './fingerprint';

// Nest's metadata for `@Body()` parameters (stable since Nest 6, not re-exported from the
// package root; deep imports would break on Nest 12's ESM export map).
const ROUTE_ARGS_METADATA = '__routeArguments__';
const BODY_PARAMTYPE = '3';

type Handler = (...args: unknown[]) => unknown;
type ClassType = new (...args: unknown[]) => object;

const PLAIN_TYPES = new Set<unknown>([Object, Array, String, Number, Boolean, undefined]);
const bodyTypes = new WeakMap<Handler, ClassType | null>();

/** The DTO class of the handler's whole-body `@Body()` parameter, if it has one. */
function bodyType(controller: object, handler: Handler): ClassType | null {
  const cached = bodyTypes.get(handler);
  if (cached !== undefined) return cached;
  const args =
    (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller.constructor, handler.name) as
      Record<string, { index: number; data?: unknown }> | undefined) ?? {};
  const paramTypes =
    (Reflect.getMetadata('design:paramtypes', controller, handler.name) as unknown[] | undefined) ??
    [];
  let found: ClassType | null = null;
  for (const [name, arg] of Object.entries(args)) {
    const isWholeBody = name.split(':')[0] === BODY_PARAMTYPE && arg.data === undefined;
    const type = paramTypes[arg.index];
    if (isWholeBody && typeof type === 'function' && !PLAIN_TYPES.has(type)) {
      found = type as ClassType;
    }
  }
  bodyTypes.set(handler, found);
  return found;
}

/**
 * The fields of `type` whose default differs between two creations (a timestamp, a random id):
 * found once per class. The second creation waits for the clock's next millisecond, so a
 * default read from it (`Date.now()`, `new Date().toISOString()`) differs too; a Date default
 * counts as one in any case.
 */
const unstableDefaults = new WeakMap<ClassType, readonly string[]>();

function unstableDefaultsOf(type: ClassType): readonly string[] {
  const known = unstableDefaults.get(type);
  if (known) return known;
  const first = plainToInstance(type, {}) as Record<string, unknown>;
  waitForNextMillisecond();
  const second = plainToInstance(type, {}) as Record<string, unknown>;
  const unstable = Object.keys(first).filter(
    (field) =>
      first[field] instanceof Date ||
      JSON.stringify(first[field]) !== JSON.stringify(second[field]),
  );
  unstableDefaults.set(type, unstable);
  return unstable;
}

/**
 * Spins until `Date.now()` moves on: about a millisecond, once per DTO class. Bounded by a
 * count, not a clock: fake timers in a user's tests freeze `Date` and `performance` alike.
 */
function waitForNextMillisecond(): void {
  const start = Date.now();
  for (let spins = 0; spins < 1_000_000 && Date.now() === start; spins++) {
    // spin
  }
}

/**
 * The body as the handler will see it after `ValidationPipe({ transform: true })`: the DTO's
 * property initialisers supply the defaults, so `{}` and `{ currency: 'usd' }` hash the same
 * when `currency` defaults to `'usd'`. The claim runs before pipes, hence this re-creation.
 * A default that differs between two creations is left out: it would make every honest retry
 * look like another request.
 *
 * class-transformer recurses once per level of the body, so the depth bound is checked first
 * (a 400 rejection past `MAX_BODY_DEPTH`). It also drops `__proto__` keys, at any depth, which
 * must still tell two bodies apart: a body with one is fingerprinted as sent, without defaults.
 */
export function bodyWithDefaults(controller: object, handler: Handler, body: unknown): unknown {
  const type = bodyType(controller, handler);
  if (!type || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  if (assertFingerprintable(body, MAX_BODY_DEPTH)) return body;
  const withDefaults = plainToInstance(type, body) as Record<string, unknown>;
  for (const field of unstableDefaultsOf(type)) {
    if (!(field in body)) delete withDefaults[field];
  }
  return withDefaults;
}
