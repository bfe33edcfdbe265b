import { plainToInstance } from 'class-transformer';
import { assertFingerprintable, CONSTRUCTOR_KEY, MAX_BODY_DEPTH, PROTO_KEY } from './fingerprint';

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
  const name = methodName(controller, handler);
  const args =
    (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller.constructor, name) as
      Record<string, { index: number; data?: unknown }> | undefined) ?? {};
  const paramTypes =
    (Reflect.getMetadata('design:paramtypes', controller, name) as unknown[] | undefined) ?? [];
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
 * The property that holds `handler` on the controller's prototype chain: Nest and TypeScript key
 * a route's parameter metadata by it. Found by identity, because a method decorator that wraps
 * the handler (a tracing span, say) gives the function it puts there a `name` of its own.
 */
function methodName(controller: object, handler: Handler): string {
  for (
    let prototype: object | null = controller;
    prototype !== null && prototype !== Object.prototype;
    prototype = Object.getPrototypeOf(prototype) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(prototype)) {
      if (
        name !== 'constructor' &&
        Object.getOwnPropertyDescriptor(prototype, name)?.value === handler
      )
        return name;
    }
  }
  return handler.name;
}

/**
 * class-transformer's metadata store (`class-transformer/cjs/storage`), read to learn whether
 * a DTO has any of its decorators. Loaded on first use; undefined when its layout is not the
 * one this check knows (another version), which sends every body through class-transformer.
 */
interface MetadataStore {
  /** The `@Type` of a class's property, its ancestors' included. */
  findTypeMetadata(target: unknown, propertyName: string): unknown;
  _typeMetadatas: Map<unknown, unknown>;
  _transformMetadatas: Map<unknown, unknown>;
  _exposeMetadatas: Map<unknown, unknown>;
  _excludeMetadatas: Map<unknown, unknown>;
}

let metadataStore: MetadataStore | null | undefined;

function classTransformerMetadata(): MetadataStore | null {
  if (metadataStore !== undefined) return metadataStore;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of the package, not an entry point
    const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as {
      defaultMetadataStorage?: Partial<MetadataStore>;
    };
    const maps = [
      defaultMetadataStorage?._typeMetadatas,
      defaultMetadataStorage?._transformMetadatas,
      defaultMetadataStorage?._exposeMetadatas,
      defaultMetadataStorage?._excludeMetadatas,
    ];
    metadataStore =
      maps.every((map) => map instanceof Map) &&
      typeof defaultMetadataStorage?.findTypeMetadata === 'function'
        ? (defaultMetadataStorage as MetadataStore)
        : null;
  } catch {
    metadataStore = null;
  }
  return metadataStore;
}

const plainDtos = new WeakMap<ClassType, boolean>();

/**
 * Whether `plainToInstance(type, body)` of a JSON body is the DTO's defaults with the body's
 * values assigned over them: no `@Type`, `@Transform`, `@Expose` or `@Exclude` on the class or
 * its ancestors, no method or accessor a body key could name, no function-valued default.
 * Found once per class.
 */
function isPlainDto(type: ClassType): boolean {
  const known = plainDtos.get(type);
  if (known !== undefined) return known;
  let plain = false;
  const store = classTransformerMetadata();
  if (store) {
    plain = true;
    for (
      let target: unknown = type;
      typeof target === 'function' && target !== Function.prototype;
      target = Object.getPrototypeOf(target)
    ) {
      const prototype = (target as { prototype?: object }).prototype;
      const ownNames = prototype ? Object.getOwnPropertyNames(prototype) : [];
      if (
        store._typeMetadatas.has(target) ||
        store._transformMetadatas.has(target) ||
        store._exposeMetadatas.has(target) ||
        store._excludeMetadatas.has(target) ||
        ownNames.some((name) => name !== 'constructor')
      ) {
        plain = false;
        break;
      }
    }
    if (plain) {
      try {
        plain = Object.values(new type()).every((value) => typeof value !== 'function');
      } catch {
        plain = false;
      }
    }
  }
  plainDtos.set(type, plain);
  return plain;
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
  let unstable: readonly string[] = [];
  try {
    const first = plainToInstance(type, {}) as Record<string, unknown>;
    waitForNextMillisecond();
    const second = plainToInstance(type, {}) as Record<string, unknown>;
    unstable = Object.keys(first).filter(
      (field) =>
        first[field] instanceof Date ||
        JSON.stringify(first[field]) !== JSON.stringify(second[field]),
    );
  } catch {
    // A class that cannot be built from nothing has no defaults to tell apart.
  }
  unstableDefaults.set(type, unstable);
  return unstable;
}

/**
 * Whether `type` or a DTO below it has a `@Type` with a discriminator: class-transformer
 * deletes the discriminator property from the object it reads (unless told to keep it), and
 * what it builds does not hold it. Such a body is fingerprinted as sent: its defaults are not
 * applied, and the request's body is left as the handler's pipes must find it. So is one below
 * a `@Type` whose function needs the object it types (`@Type((options) => …)`): what it may
 * build cannot be known beforehand. Found once per class, by a walk of its own (a class below
 * it reached from elsewhere first is walked again from there).
 */
const discriminated = new WeakMap<object, boolean>();

function hasDiscriminator(type: ClassType, store: MetadataStore): boolean {
  let found = discriminated.get(type);
  if (found === undefined) {
    found = reachesDiscriminator(type, store, new Set());
    discriminated.set(type, found);
  }
  return found;
}

interface TypeMetadataLike {
  options?: { discriminator?: unknown };
  typeFunction?: () => unknown;
}

function reachesDiscriminator(
  type: unknown,
  store: MetadataStore,
  visiting: Set<unknown>,
): boolean {
  if (typeof type !== 'function' || visiting.has(type)) return false;
  visiting.add(type);
  for (
    let target: unknown = type;
    typeof target === 'function' && target !== Function.prototype;
    target = Object.getPrototypeOf(target)
  ) {
    const byProperty = store._typeMetadatas.get(target) as
      Map<string, TypeMetadataLike> | undefined;
    for (const metadata of byProperty?.values() ?? []) {
      if (metadata.options?.discriminator) return true;
      let nested: unknown;
      try {
        nested = metadata.typeFunction?.();
      } catch {
        return true;
      }
      if (reachesDiscriminator(nested, store, visiting)) return true;
    }
  }
  return false;
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
  const keys = assertFingerprintable(body, MAX_BODY_DEPTH);
  if (keys & PROTO_KEY) return body;
  // A DTO class-transformer has nothing to do for (no decorators of its, no methods) turns a
  // JSON body into its defaults with the body's own values over them: the same JSON, without
  // the copy. A `constructor` key, which class-transformer drops, takes the long way.
  let withDefaults: Record<string, unknown>;
  if (!(keys & CONSTRUCTOR_KEY) && isPlainDto(type)) {
    withDefaults = Object.assign(new type(), body) as Record<string, unknown>;
  } else {
    const store = classTransformerMetadata();
    if (store && hasDiscriminator(type, store)) return body;
    try {
      withDefaults = plainToInstance(type, body) as Record<string, unknown>;
    } catch {
      // class-transformer trips on some bodies (a nested `constructor` key holding a string):
      // such a body is fingerprinted as sent, as one with `__proto__` is.
      return body;
    }
  }
  leaveOutUnstableDefaults(withDefaults, body, 0);
  return withDefaults;
}

/**
 * Leaves out of `dto` the defaults of its class that differ on every creation and that `sent`
 * (the body's part at the same place) did not give, then does the same in each nested DTO that
 * class-transformer built for a property with `@Type` (its value, or each element of an array,
 * a Map or a Set). A nested line's timestamp would make every honest retry look like another
 * request as well. Only there: a value object a `@Transform` built from a sent value is left
 * whole, since its fields may be what tells two requests apart.
 */
function leaveOutUnstableDefaults(dto: object, sent: unknown, depth: number): void {
  const given = isObject(sent) ? (sent as Record<string, unknown>) : {};
  const fields = dto as Record<string, unknown>;
  const type = (Object.getPrototypeOf(dto) as { constructor: ClassType }).constructor;
  for (const field of unstableDefaultsOf(type)) {
    if (!(field in given)) delete fields[field];
  }
  const store = classTransformerMetadata();
  if (!store || depth >= MAX_BODY_DEPTH) return;
  for (const field of Object.keys(fields)) {
    const value = fields[field];
    if (!isObject(value) || !store.findTypeMetadata(type, field)) continue;
    for (const [nested, sentNested] of nestedValues(value, given[field], depth)) {
      leaveOutUnstableDefaults(nested, sentNested, depth + 1);
    }
  }
}

/**
 * A `@Type` property's DTOs, each with the body's part it was built from: the value itself, or
 * the elements of its arrays, Maps and Sets, at any depth.
 */
function nestedValues(value: unknown, sent: unknown, depth: number): [object, unknown][] {
  if (depth > MAX_BODY_DEPTH || !isObject(value)) return [];
  if (value instanceof Map) {
    const given = isObject(sent) ? (sent as Record<string, unknown>) : {};
    return [...value].flatMap(([key, nested]) =>
      nestedValues(nested, given[String(key)], depth + 1),
    );
  }
  if (Array.isArray(value) || value instanceof Set) {
    const given = Array.isArray(sent) ? (sent as unknown[]) : [];
    return [...(value as Iterable<unknown>)].flatMap((nested, index) =>
      nestedValues(nested, given[index], depth + 1),
    );
  }
  return isClassInstance(value) ? [[value, sent]] : [];
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** An instance of a class, not a plain object or a built-in class-transformer makes. */
function isClassInstance(value: unknown): value is object {
  if (!isObject(value)) return false;
  const prototype = Object.getPrototypeOf(value) as object | null;
  return (
    prototype !== null &&
    prototype !== Object.prototype &&
    !Array.isArray(value) &&
    !(value instanceof Date) &&
    !(value instanceof Map) &&
    !(value instanceof Set) &&
    !(value instanceof RegExp) &&
    !ArrayBuffer.isView(value)
  );
}
