import type { ExecutionContext } from '@nestjs/common';

// Nest's route path metadata key (as in `@Controller()`/`@Post()`); not exported from the root.
const PATH_METADATA = 'path';

/** The request fields the library reads; Express and Fastify requests both have them. */
export interface HttpRequestLike {
  method: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
  params?: unknown;
  query?: unknown;
  body?: unknown;
  route?: { path?: unknown };
  /** The parameters of the controller's `host` pattern, where it has some (Nest sets them). */
  hosts?: Record<string, unknown>;
  routeOptions?: { url?: string };
  /** Express's application, with its settings. */
  app?: { settings?: Record<string, unknown> };
}

/** The response fields the library reads; Express responses and Fastify replies both have them. */
export interface HttpResponseLike {
  statusCode: number;
  getHeader(name: string): number | string | string[] | undefined;
}

export function httpRequest(context: ExecutionContext): HttpRequestLike {
  return context.switchToHttp().getRequest<HttpRequestLike>();
}

/**
 * The HTTP request behind the context: the request itself, or for a GraphQL resolver the `req`
 * of its context (Nest passes resolvers `[root, args, context, info]`; `@nestjs/apollo` puts
 * the request there). Read by index, so the library need not load `@nestjs/graphql`. Public:
 * a `tenantResolver` reads the principal through it on routes and mutations alike.
 */
export function underlyingRequest<T>(context: ExecutionContext): T | undefined {
  // `in`: a hand-made context (a unit test's, say) may offer switchToHttp() alone.
  if ('getType' in context && context.getType<string>() === 'graphql')
    return context.getArgByIndex<{ req?: T } | undefined>(2)?.req;
  return context.switchToHttp().getRequest<T>();
}

export function httpResponse(context: ExecutionContext): HttpResponseLike {
  return context.switchToHttp().getResponse<HttpResponseLike>();
}

/**
 * The route pattern (`/v1/orders/:id`), never the raw URL: the raw URL would put path
 * parameters and the query into the scope, so one key would name many operations.
 */
export function routePattern(context: ExecutionContext, request: HttpRequestLike): string {
  if (typeof request.route?.path === 'string') return request.route.path;
  if (typeof request.routeOptions?.url === 'string') return request.routeOptions.url;
  const controllerPath =
    (Reflect.getMetadata(PATH_METADATA, context.getClass()) as string | string[] | undefined) ?? '';
  const handlerPath =
    (Reflect.getMetadata(PATH_METADATA, context.getHandler()) as string | string[] | undefined) ??
    '';
  return `/${[controllerPath, handlerPath].flat().join('/')}`.replace(/\/+/g, '/');
}

/** The query of every request whose URL has none: shared, so frozen. */
const NO_QUERY: Readonly<Record<string, never>> = Object.freeze({});

/**
 * The request's parsed query; an empty object, without reading `query`, when its URL has no
 * query string. Express 5 parses the query string anew at every read of `req.query` (a getter on
 * its prototype), which a request without one need not pay for. A `query` the request holds as
 * its own property (Fastify's, or one a hook set) is taken as it is.
 */
export function requestQuery(request: HttpRequestLike): unknown {
  if (
    typeof request.url === 'string' &&
    !request.url.includes('?') &&
    !Object.hasOwn(request, 'query')
  )
    return NO_QUERY;
  return request.query;
}

/**
 * Whether the Express app behind `request` writes JSON other than as JSON.stringify(value) does:
 * its `json spaces`, `json replacer` or `json escape` setting is set. The bytes it sends for a
 * value then differ from the bytes the library stored for that value.
 */
export function formatsJson(request: HttpRequestLike): boolean {
  const settings = request.app?.settings;
  // As Express's res.json reads them: a falsy setting changes nothing.
  return (
    settings !== undefined &&
    Boolean(settings['json spaces'] || settings['json replacer'] || settings['json escape'])
  );
}

function headerValue(request: HttpRequestLike, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The values of the headers `fingerprintHeaders` names, as the fingerprint takes them (undefined
 * where the request has none, or when there is no HTTP request at all).
 */
export function fingerprintedHeaders(
  request: HttpRequestLike | undefined,
  names: readonly string[],
): Record<string, string | undefined> {
  return Object.fromEntries(
    names.map((name) => [name, request ? headerValue(request, name) : undefined]),
  );
}
