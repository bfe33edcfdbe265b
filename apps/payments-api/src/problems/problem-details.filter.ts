import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import {
  IdempotencyProblemType,
  isDatabaseUnavailable,
  PROBLEM_CONTENT_TYPE,
  problemFromException,
  type ProblemDetails,
} from 'nestjs-pg-idempotency';

/** What the library sends with its own 503: the demo answers every route's outage the same. */
const DATABASE_RETRY_AFTER_SECONDS = '1';

/**
 * Every error leaves as RFC 9457 problem details. HttpExceptions use the library's renderer,
 * so a live error and a stored, replayed one look the same. A database that cannot be reached
 * is a 503 with Retry-After on every route, as the library answers on idempotent ones.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger(ProblemDetailsFilter.name);

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    // A resolver's error belongs to GraphQL: Apollo puts it in the response's `errors`.
    if (host.getType<string>() === 'graphql') throw exception;
    const problem = this.toProblem(exception);
    const adapter = this.adapterHost.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    adapter.setHeader(response, 'Content-Type', PROBLEM_CONTENT_TYPE);
    if (problem.type === IdempotencyProblemType.databaseUnavailable)
      adapter.setHeader(response, 'Retry-After', DATABASE_RETRY_AFTER_SECONDS);
    adapter.reply(response, JSON.stringify(problem), problem.status);
  }

  private toProblem(exception: unknown): ProblemDetails {
    if (exception instanceof HttpException) return problemFromException(exception);
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(`the database could not be reached: ${String(exception)}`);
      return {
        type: IdempotencyProblemType.databaseUnavailable,
        title: 'Database unavailable',
        status: 503,
        detail: 'The database could not be reached. Retry later.',
      };
    }
    const bodyParserStatus = bodyParserErrorStatus(exception);
    if (bodyParserStatus === HttpStatus.PAYLOAD_TOO_LARGE) {
      return {
        type: 'about:blank',
        title: 'Payload Too Large',
        status: 413,
        detail: 'The request body exceeds 1 MiB.',
      };
    }
    if (bodyParserStatus !== undefined) {
      return {
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail: 'The request body is not valid JSON.',
      };
    }
    this.logger.error(exception instanceof Error ? exception.stack : String(exception));
    return { type: 'about:blank', title: 'Internal Server Error', status: 500 };
  }
}

/**
 * Errors of the body parsers: Express's body-parser sets `type` (`entity.too.large`,
 * `entity.parse.failed`) and `status`; Fastify's content-type parser sets `code`
 * (`FST_ERR_CTP_BODY_TOO_LARGE`, `FST_ERR_CTP_INVALID_JSON_BODY`…) and `statusCode`.
 */
function bodyParserErrorStatus(exception: unknown): number | undefined {
  if (typeof exception !== 'object' || exception === null) return undefined;
  const { type, status, code, statusCode } = exception as Record<string, unknown>;
  if (typeof type === 'string' && type.startsWith('entity.') && typeof status === 'number')
    return status;
  if (typeof code === 'string' && code.startsWith('FST_ERR_CTP') && typeof statusCode === 'number')
    return statusCode;
  if (
    code === 'FST_ERR_BAD_STATUS_CODE' ||
    (exception instanceof SyntaxError && statusCode === 400)
  )
    return 400;
  return undefined;
}
