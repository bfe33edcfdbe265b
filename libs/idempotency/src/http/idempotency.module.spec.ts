import type { Provider } from '@nestjs/common';
import { IdempotencyModule } from './idempotency.module';
import { IDEMPOTENCY_MODULE_OPTIONS } from './idempotency.module-definition';

const optionsProvider = (providers: Provider[] | undefined) =>
  providers?.find((p) => typeof p === 'object' && p.provide === IDEMPOTENCY_MODULE_OPTIONS);

describe('IdempotencyModule entry points', () => {
  it('registers itself (with its providers) globally by default, with no options at all', () => {
    const definition = IdempotencyModule.forRoot();
    expect(definition.module).toBe(IdempotencyModule);
    expect(definition.global).toBe(true);
    expect(optionsProvider(definition.providers)).toEqual({
      provide: IDEMPOTENCY_MODULE_OPTIONS,
      useValue: {},
    });
  });

  it('honours isGlobal: false and keeps it out of the options the providers see', () => {
    const definition = IdempotencyModule.forRoot({ isGlobal: false, ttlSeconds: 60 });
    expect(definition.module).toBe(IdempotencyModule);
    expect(definition.global).toBe(false);
    expect(optionsProvider(definition.providers)).toEqual({
      provide: IDEMPOTENCY_MODULE_OPTIONS,
      useValue: { ttlSeconds: 60 },
    });
  });

  it('builds the async options provider from imports, inject and the factory', () => {
    class ConfigModule {}
    const useFactory = (ttl: number) => ({ ttlSeconds: ttl });
    const definition = IdempotencyModule.forRootAsync({
      imports: [ConfigModule],
      inject: ['TTL'],
      useFactory,
      isGlobal: false,
    });
    expect(definition.module).toBe(IdempotencyModule);
    expect(definition.global).toBe(false);
    expect(definition.imports).toEqual([ConfigModule]);
    expect(optionsProvider(definition.providers)).toEqual({
      provide: IDEMPOTENCY_MODULE_OPTIONS,
      useFactory,
      inject: ['TTL'],
    });
  });
});
