import type { ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';

/** The request fields the API key guard reads and writes. */
export interface ApiKeyRequest {
  headers: Record<string, string | undefined>;
  user?: { tenantId: string };
}

/**
 * The HTTP request behind a route or a GraphQL resolver: `POST /graphql` carries the same
 * Authorization header, and the guard puts the same principal on it.
 */
export function authenticatedRequest(context: ExecutionContext): ApiKeyRequest {
  if (context.getType<string>() === 'graphql')
    return GqlExecutionContext.create(context).getContext<{ req: ApiKeyRequest }>().req;
  return context.switchToHttp().getRequest<ApiKeyRequest>();
}
