import { ApiUnauthorizedResponse } from '@nestjs/swagger';
import { problemContent } from '../problems/problem.schema';

/** Documents the 401 that ApiKeyGuard answers on every route it guards. */
export function ApiKeyRequired(): ClassDecorator & MethodDecorator {
  return ApiUnauthorizedResponse({
    description: 'No valid API key in Authorization: Bearer <key>.',
    content: problemContent(401),
  });
}
