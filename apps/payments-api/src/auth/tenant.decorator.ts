import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { authenticatedRequest } from './authenticated-request';

/** The tenant the API key guard authenticated (routes and GraphQL resolvers alike). */
export const Tenant = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  // Set by ApiKeyGuard before any handler or resolver runs.
  return (authenticatedRequest(context).user as { tenantId: string }).tenantId;
});
