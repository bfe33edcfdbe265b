import {
  type CanActivate,
  type ExecutionContext,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { authenticatedRequest } from './authenticated-request';
import { IS_PUBLIC } from './public.decorator';

/**
 * The demo's API keys. A real app would look hashed keys up in a table. A Map, not an object
 * literal: `Bearer __proto__` must not find an inherited property.
 */
const TENANTS_BY_API_KEY: ReadonlyMap<string, string> = new Map([
  ['demo_acme', 'acme'],
  ['demo_globex', 'globex'],
]);

export interface AuthenticatedPrincipal {
  tenantId: string;
}

/**
 * The only place a tenant comes from: the API key. Nothing the client sends elsewhere (a
 * header, a body field) can name another tenant's key space.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const request = authenticatedRequest(context);
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const tenantId = match ? TENANTS_BY_API_KEY.get(match[1]) : undefined;
    if (!tenantId) {
      throw new UnauthorizedException('A valid API key is required: Authorization: Bearer <key>.');
    }
    request.user = { tenantId };
    return true;
  }
}
