import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'payments-api:public';

/** Marks a route that needs no API key (health checks). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
