import { Inject, Injectable, RequestMethod } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { IDEMPOTENCY_OPTIONS } from '../idempotency.constants';
import type { ResolvedIdempotencyOptions } from '../idempotency.defaults';
import { MAX_BODY_DEPTH } from '../fingerprint';
import { IdempotencyProblemType } from '../idempotency.errors';
import { PROBLEM_CONTENT_TYPE } from '../problem-details';
import {
  type ControllerClass,
  controllerMethods,
  isRouteHandler,
} from '../../shared/controller-methods';
import { type RouteOptions, routeOptions } from '../route-options';

type Decorator = (
  target: object,
  key?: string | symbol,
  descriptor?: PropertyDescriptor,
) => unknown;
interface SwaggerDecorators {
  ApiHeader(options: Record<string, unknown>): Decorator;
  ApiResponse(options: Record<string, unknown>): Decorator;
}

// Handlers already documented: several apps in one process share their controller classes.
const documented = new WeakSet<object>();

/** `@nestjs/swagger` when the app has it; the library works without. */
function loadSwagger(): SwaggerDecorators | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, loaded only if present
    return require('@nestjs/swagger') as SwaggerDecorators;
  } catch {
    return undefined;
  }
}

function problemResponse(status: number, description: string, types: string[]) {
  return {
    status,
    description,
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string', enum: types },
            title: { type: 'string' },
            status: { type: 'integer', enum: [status] },
            detail: { type: 'string' },
          },
        },
      },
    },
  };
}

/** Methods the interceptor leaves alone (`SAFE_METHODS`): a class-level `@Idempotent()` too. */
const SAFE_REQUEST_METHODS: ReadonlySet<unknown> = new Set([
  RequestMethod.GET,
  RequestMethod.HEAD,
  RequestMethod.OPTIONS,
]);

/**
 * Documents every `@Idempotent()` route in OpenAPI: the key header (with the configured name,
 * which is why this runs at start-up and not inside the decorator) and the 400, 409, 422, 503
 * and 500 problems the library answers itself (its 500 only where the route documents none).
 * It runs when Nest constructs it, in `NestFactory.create`: an app that builds its document
 * before `listen()` or `init()`, as Nest's own guide does, gets it all.
 */
@Injectable()
export class OpenApiDocumenter {
  constructor(
    @Inject(IDEMPOTENCY_OPTIONS) private readonly options: ResolvedIdempotencyOptions,
    discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {
    const swagger = loadSwagger();
    // The controllers are known before any instance is made: Nest scans every module first.
    if (swagger) this.documentControllers(swagger, discovery);
  }

  private documentControllers(swagger: SwaggerDecorators, discovery: DiscoveryService): void {
    for (const { metatype } of discovery.getControllers()) {
      if (typeof metatype !== 'function') continue;
      for (const [prototype, name, descriptor] of routeHandlers(metatype)) {
        const handler = descriptor.value as (...args: never[]) => unknown;
        if (documented.has(handler)) continue;
        if (SAFE_REQUEST_METHODS.has(Reflect.getMetadata(METHOD_METADATA, handler))) continue;
        // An inherited handler is one function, documented once for every class that extends
        // the one defining it: only what that class says holds for all of them.
        const owner = prototype === metatype.prototype ? metatype : prototype.constructor;
        const route = routeOptions(this.reflector, owner, handler);
        if (!route) continue;
        this.document(swagger, owner, name, descriptor, route);
        documented.add(handler);
      }
    }
  }

  private document(
    swagger: SwaggerDecorators,
    controller: ControllerClass,
    name: string,
    descriptor: PropertyDescriptor,
    route: RouteOptions,
  ): void {
    const { headerName, maxKeyLength, lockTimeoutMs } = this.options;
    const { required } = route;
    // Only 'throw' refuses the write; 'warn' lets it through.
    const guarded = (route.writeGuard ?? this.options.writeGuard) === 'throw';
    const handler = descriptor.value as object;
    // @nestjs/swagger documents a route's success response (201 for a POST, else 200, or its
    // @HttpCode; with the type its CLI plugin recorded) only when the route has no
    // @ApiResponse() at all: the library's would hide it, so it is written here.
    const plugin = pluginResponse(controller, name);
    const success =
      Reflect.getMetadata(API_RESPONSE_METADATA, handler) === undefined
        ? [
            swagger.ApiResponse({
              description: '',
              ...plugin,
              status: plugin.status ?? successStatus(handler),
            }),
          ]
        : [];
    const decorators = [
      ...success,
      swagger.ApiHeader({
        name: headerName,
        required,
        description:
          `Idempotency key: 1 to ${maxKeyLength} printable ASCII characters. A key with a comma is sent as a ` +
          'quoted string ("…"), whose quotes and escapes do not count. ' +
          'Retries of one operation send the same key; the first response is replayed byte for byte.' +
          (required ? '' : ' Without it the request runs unprotected.'),
        // The quoted form's bound: its quotes and escapes do not count towards the key's.
        schema: { type: 'string', minLength: 1, maxLength: 2 * maxKeyLength + 2 },
      }),
      swagger.ApiResponse(
        problemResponse(
          400,
          `The ${headerName} header is ${required ? 'missing or ' : ''}malformed, or the body nests deeper than ${MAX_BODY_DEPTH} ` +
            'levels or holds a number out of range (such as 1e400); nothing was done.',
          [
            // Only a required key can be missing: without it, an optional route just runs.
            ...(required ? [IdempotencyProblemType.missingKey] : []),
            IdempotencyProblemType.malformedKey,
            IdempotencyProblemType.unfingerprintableRequest,
          ],
        ),
      ),
      swagger.ApiResponse({
        ...problemResponse(
          409,
          `A request with this key is still running (answered within ${lockTimeoutMs} ms). Retry after Retry-After seconds.`,
          [IdempotencyProblemType.keyInUse],
        ),
        headers: {
          'Retry-After': {
            description: 'Seconds to wait before retrying',
            schema: { type: 'integer' },
          },
        },
      }),
      swagger.ApiResponse(
        problemResponse(422, 'This key was already used with a different request.', [
          IdempotencyProblemType.keyReused,
        ]),
      ),
      swagger.ApiResponse({
        ...problemResponse(
          503,
          'The database could not be reached. Retry with the same key after Retry-After seconds.',
          [IdempotencyProblemType.databaseUnavailable],
        ),
        headers: {
          'Retry-After': {
            description: 'Seconds to wait before retrying',
            schema: { type: 'integer' },
          },
        },
      }),
    ];
    // The route's own 500, if it documents one, says more about its handler than ours would.
    const own500 = documentsStatus(handler, 500) || documentsStatus(controller, 500);
    if (!own500) {
      decorators.push(
        swagger.ApiResponse(
          problemResponse(
            500,
            'The outcome could not be stored and nothing was committed (the response is over ' +
              'maxResponseBytes' +
              (guarded ? ', or the handler wrote outside the request transaction' : '') +
              '), or the stored outcome opens with no configured encryption key (the handler did ' +
              'not run again).',
            [
              IdempotencyProblemType.responseTooLarge,
              ...(guarded ? [IdempotencyProblemType.writeOutsideTransaction] : []),
              IdempotencyProblemType.sealedRecordUnreadable,
            ],
          ),
        ),
      );
    }
    for (const decorate of decorators) decorate(controller.prototype as object, name, descriptor);
  }
}

// Where @nestjs/swagger keeps the `@ApiResponse()`s of a handler, or of a controller, by status.
const API_RESPONSE_METADATA = 'swagger/apiResponse';
// Where Nest keeps a handler's `@HttpCode()` and its request method (as `'path'` its path): the
// package root exports neither name.
const HTTP_CODE_METADATA = '__httpCode__';
const METHOD_METADATA = 'method';

/**
 * The route handlers of a controller class, its inherited ones included (Nest serves them, and
 * documents them): each name once, where the nearest class defines it.
 */
function routeHandlers(metatype: ControllerClass): [object, string, PropertyDescriptor][] {
  return controllerMethods(metatype).filter(([, , descriptor]) => isRouteHandler(descriptor.value));
}

// Where the @nestjs/swagger CLI plugin leaves what it read from a controller's source: a static
// method of the class, called when the document is built.
const PLUGIN_METADATA_FACTORY = '_OPENAPI_METADATA_FACTORY';

/**
 * What the @nestjs/swagger CLI plugin recorded as the route's response (its return type), as
 * @nestjs/swagger reads it: the nearest class that has it, without the operation's own fields.
 * @nestjs/swagger applies it only to a route with no response documented, which the library's
 * problems would make every `@Idempotent()` route.
 */
function pluginResponse(controller: ControllerClass, name: string): Record<string, unknown> {
  for (
    let prototype = controller.prototype as { constructor?: unknown } | null;
    prototype !== null && prototype !== Object.prototype;
    prototype = Object.getPrototypeOf(prototype) as { constructor?: unknown } | null
  ) {
    const factory = (prototype.constructor as Record<string, unknown> | undefined)?.[
      PLUGIN_METADATA_FACTORY
    ];
    if (typeof factory !== 'function') continue;
    const entry = (factory as () => Record<string, Record<string, unknown> | undefined>)()[name];
    if (!entry) continue;
    const { summary: _summary, deprecated: _deprecated, tags: _tags, ...response } = entry;
    if (Object.keys(response).length > 0) return response;
  }
  return {};
}

/** The status @nestjs/swagger documents for a route without @ApiResponse(), as it computes it. */
function successStatus(handler: object): number {
  const code = Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined;
  if (code) return code;
  return Reflect.getMetadata(METHOD_METADATA, handler) === RequestMethod.POST ? 201 : 200;
}

/** Whether a handler, or a controller for all its handlers, documents `status` itself. */
function documentsStatus(target: object, status: number): boolean {
  const responses = Reflect.getMetadata(API_RESPONSE_METADATA, target) as
    Record<string, unknown> | undefined;
  return responses !== undefined && String(status) in responses;
}
