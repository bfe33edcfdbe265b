import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedPrincipal } from './api-key.guard';

/** The tenant the API key guard authenticated. */
export const Tenant = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  return context.switchToHttp().getRequest<{ user: AuthenticatedPrincipal }>().user.tenantId;
});
