/** A controller class, as `DiscoveryService` gives its `metatype`. */
export type ControllerClass = { prototype: unknown };

/**
 * Each method of a controller and of the classes it extends, with the prototype that defines
 * it: the nearest definition of each name, as a call on an instance would find it.
 */
export function controllerMethods(
  metatype: ControllerClass,
): [prototype: object, name: string, descriptor: PropertyDescriptor][] {
  const methods: [object, string, PropertyDescriptor][] = [];
  const seen = new Set<string>();
  for (
    let prototype = metatype.prototype as object | null;
    prototype !== null && prototype !== Object.prototype;
    prototype = Object.getPrototypeOf(prototype) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(prototype)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
      if (typeof descriptor?.value === 'function') methods.push([prototype, name, descriptor]);
    }
  }
  return methods;
}

/** An HTTP route handler: Nest's `@Post()`, `@Get()`… give it a path. */
export function isRouteHandler(handler: unknown): boolean {
  return typeof handler === 'function' && Reflect.getMetadata('path', handler) !== undefined;
}

// Where `@MessagePattern()` and `@EventPattern()` keep a handler's patterns and transport
// (@nestjs/microservices is an optional peer: not imported for two names).
const PATTERN_METADATA = 'microservices:pattern';
const TRANSPORT_METADATA = 'microservices:transport';

/** A message handler's patterns, or undefined for a method that handles no messages. */
export function messagePatterns(handler: object): unknown[] | undefined {
  return Reflect.getMetadata(PATTERN_METADATA, handler) as unknown[] | undefined;
}

/** The transport a message handler is limited to, or undefined for any. */
export function messageTransport(handler: object): unknown {
  return Reflect.getMetadata(TRANSPORT_METADATA, handler) as unknown;
}
