import { ServerResponse } from 'node:http';
import type { CallHandler, ClassSerializerContextOptions, ExecutionContext } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { bodyWithDefaults } from './body-defaults';
import {
  type FingerprintInput,
  keyLabel,
  requestFingerprint,
  verbatimRequest,
} from './fingerprint';
import {
  fingerprintedHeaders,
  formatsJson,
  type HttpRequestLike,
  httpResponse,
  requestQuery,
} from './http-exchange';
import type { ResolvedIdempotencyOptions } from './idempotency.defaults';
import { IdempotencyRejection } from './idempotency.errors';
import type { StoredResponse } from './idempotency.options';
import { parseIdempotencyKey } from './idempotency-key.parser';
import type { IdempotentRequest } from './idempotent-request';
import { type KeyId, tenantIdOf } from './key-id';
import type { Delivery, RequestFlow } from './request-flow';
import type { RouteOptions } from './route-options';
import { assertBodyParsed, uploadedFileDigests } from './request-body';
import { verbatimJsonBody, wireBody } from './stored-response';

/**
 * One request on an `@Idempotent()` HTTP route: its key, tenant and fingerprint read from the
 * request, its outcome sent through the adapter (Express or Fastify) with the stored status and
 * headers. One object per request, its methods on the prototype: no closures per request.
 */
export class HttpRequestFlow implements RequestFlow {
  constructor(
    private readonly context: ExecutionContext,
    private readonly next: CallHandler,
    private readonly route: RouteOptions,
    private readonly request: HttpRequestLike,
    private readonly pattern: string,
    /** What tells this handler from others on its method and path (`routeVariant`), or ''. */
    private readonly variant: string,
    readonly eventScope: string,
    private readonly options: ResolvedIdempotencyOptions,
    private readonly adapterHost: HttpAdapterHost,
    /** Nothing between this route's interceptor and the router needs a value (`isOutermostInterceptor`). */
    private readonly outermost: boolean,
  ) {}

  /**
   * The key, tenant and the request as sent; undefined when an optional key is absent.
   * Synchronous unless the tenant resolver returns a promise.
   */
  describe(): IdempotentRequest | undefined | Promise<IdempotentRequest | undefined> {
    const { headerName, maxKeyLength } = this.options;
    const key = parseIdempotencyKey(
      this.request.headers[headerName.toLowerCase()],
      headerName,
      maxKeyLength,
    );
    if (key === undefined) {
      if (this.route.required) throw IdempotencyRejection.missingKey(headerName);
      return undefined;
    }
    const tenant = this.options.tenantResolver(this.context);
    // Any thenable: a resolver may return another library's promise.
    return typeof (tenant as PromiseLike<unknown> | undefined)?.then === 'function'
      ? Promise.resolve(tenant).then((resolved) => this.described(key, tenantIdOf(resolved)))
      : this.described(key, tenantIdOf(tenant));
  }

  deliver(stored: StoredResponse, replayHeaders?: Record<string, string>): Delivery {
    return { value: this.send(stored, replayHeaders) };
  }

  reject(rejection: IdempotencyRejection): Delivery {
    return {
      value: this.send({
        statusCode: rejection.status,
        headers: { ...rejection.headers, 'content-type': rejection.contentType },
        body: Buffer.from(JSON.stringify(rejection.problem), 'utf8'),
      }),
    };
  }

  released(error: unknown): Delivery {
    const response = httpResponse(this.context);
    removeHeader(response, response instanceof ServerResponse ? response : undefined, 'location');
    return { error };
  }

  private described(key: string, tenantId: string): IdempotentRequest {
    const { request, options } = this;
    assertBodyParsed(request);
    const sent: FingerprintInput = {
      method: request.method,
      route: this.pattern,
      params: request.params,
      query: requestQuery(request),
      body: request.body,
      headers: fingerprintedHeaders(request, options.fingerprintHeaders),
    };
    const files = uploadedFileDigests(request);
    if (files) sent.files = files;
    // Only where they tell requests apart: every other request keeps its fingerprint.
    if (this.variant !== '') sent.route = this.pattern + this.variant;
    if (request.hosts && Object.keys(request.hosts).length > 0) sent.hosts = request.hosts;
    return new DescribedHttpRequest(
      this.context,
      this.next,
      this.route,
      { tenantId, scope: this.eventScope, key },
      sent,
      // Only the replay cache reads the text: without it, no request pays the JSON.stringify.
      options.replayCache.enabled ? verbatimRequest(sent) : undefined,
    );
  }

  /** Sets status and headers through the adapter; the router sends the body. */
  private send(stored: StoredResponse, replayHeaders?: Record<string, string>): unknown {
    const adapter = this.adapterHost.httpAdapter;
    const response = httpResponse(this.context);
    adapter.status(response, stored.statusCode);
    // Express's `res.set` looks every Content-Type up in its MIME table; Node's own setHeader
    // takes the value as it is. The router adds the charset to a text body's type either way,
    // so the bytes sent are the same. A Fastify reply is no ServerResponse: its adapter sets them.
    const raw = response instanceof ServerResponse ? response : undefined;
    // Arrays too (Set-Cookie): both take them. A replay header wins over a stored one.
    for (const name in stored.headers) {
      if (replayHeaders?.[name] === undefined)
        setHeader(adapter, response, raw, name, stored.headers[name]);
    }
    for (const name in replayHeaders) setHeader(adapter, response, raw, name, replayHeaders[name]);
    // A failure created nothing to point at: a Location the handler set before it failed is not
    // in the record (`captureFailure`), so the first answer must not carry it either. A replay's
    // response is fresh and has none.
    if (stored.headers.location === undefined && replayHeaders?.location === undefined) {
      removeHeader(response, raw, 'location');
    }
    // The stored bytes as they are, where Express would write the value's JSON unchanged;
    // otherwise the value, for the interceptors around this one, Fastify's serialiser, an
    // adapter of another kind, or a `res.json` that middleware replaced on this response.
    const verbatim =
      this.outermost &&
      raw &&
      !Object.hasOwn(raw, 'json') &&
      adapter.getType() === 'express' &&
      !formatsJson(this.request)
        ? verbatimJsonBody(stored)
        : undefined;
    return verbatim ?? wireBody(stored);
  }
}

/**
 * An HTTP request on an idempotent route, described. Its fingerprint (the body with the DTO's
 * defaults, canonical and hashed) and its log label are computed when first asked: a replay
 * from the cache that matches `verbatim` asks for neither.
 */
class DescribedHttpRequest implements IdempotentRequest {
  readonly serializeOptions?: ClassSerializerContextOptions;
  private fingerprint?: string;
  private keyLabel?: string;

  constructor(
    readonly context: ExecutionContext,
    readonly next: CallHandler,
    readonly route: RouteOptions,
    readonly id: KeyId,
    private readonly sent: FingerprintInput,
    /** Taken now, before the handler runs: it may change the body it was given. */
    readonly verbatim: string | undefined,
  ) {
    this.serializeOptions = route.serializeOptions;
  }

  get requestHash(): string {
    if (this.fingerprint === undefined) {
      const { context, sent } = this;
      this.fingerprint = requestFingerprint({
        ...sent,
        body: bodyWithDefaults(
          context.getClass().prototype as object,
          context.getHandler() as never,
          sent.body,
        ),
      });
    }
    return this.fingerprint;
  }

  /** A hash for log lines and onReplay. */
  get label(): string {
    return (this.keyLabel ??= keyLabel(this.id.tenantId, this.id.scope, this.id.key));
  }
}

/** Express's response is Node's; a Fastify reply has `removeHeader` of its own. */
function removeHeader(response: unknown, raw: ServerResponse | undefined, name: string): void {
  if (raw) {
    raw.removeHeader(name);
    return;
  }
  const reply = response as { removeHeader?: (name: string) => unknown } | undefined;
  if (typeof reply?.removeHeader === 'function') reply.removeHeader(name);
}

/**
 * Sets a stored header as it is. An array (Set-Cookie) goes as a copy: Node and Fastify keep the
 * array they are given, and cookie code that runs later (a session's cookie, `@fastify/cookie`)
 * pushes onto it, which would grow the replay cache's entry with every answer. Fastify's
 * `reply.header` appends to a Set-Cookie already set (the handler's own, on the first answer),
 * so the header is removed first.
 */
function setHeader(
  adapter: HttpAdapterHost['httpAdapter'],
  response: unknown,
  raw: ServerResponse | undefined,
  name: string,
  value: string | string[],
): void {
  const own = Array.isArray(value) ? [...value] : value;
  if (raw) {
    raw.setHeader(name, own);
    return;
  }
  removeHeader(response, raw, name);
  adapter.setHeader(response, name, own as string);
}
