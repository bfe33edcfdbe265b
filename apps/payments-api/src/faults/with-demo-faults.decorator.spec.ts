import 'reflect-metadata';
import { INTERCEPTORS_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';

/** The controllers as a process started with `demoFaults` set to `value` loads them. */
function loadWith(value: string | undefined) {
  const saved = process.env.DEMO_FAULTS;
  if (value === undefined) delete process.env.DEMO_FAULTS;
  else process.env.DEMO_FAULTS = value;
  try {
    let loaded!: {
      create: unknown;
      createParameters: number;
      DemoFaultsInterceptor: unknown;
      register: (demoFaults: boolean) => unknown;
    };
    jest.isolateModules(() => {
      /* eslint-disable @typescript-eslint/no-require-imports -- loaded after the env is set */
      const { OrdersController } =
        require('../orders/orders.controller') as typeof import('../orders/orders.controller');
      const { DemoFaultsInterceptor } =
        require('./demo-faults.interceptor') as typeof import('./demo-faults.interceptor');
      const { AppModule } = require('../app.module') as typeof import('../app.module');
      const { configFromEnv } = require('../config') as typeof import('../config');
      /* eslint-enable @typescript-eslint/no-require-imports */
      loaded = {
        create: OrdersController.prototype.create,
        createParameters: Object.keys(
          (Reflect.getMetadata(ROUTE_ARGS_METADATA, OrdersController, 'create') as object) ?? {},
        ).length,
        DemoFaultsInterceptor,
        register: (demoFaults) =>
          AppModule.register({
            ...configFromEnv({}, 'postgres://unused', 'http://unused'),
            demoFaults,
          }),
      };
    });
    return loaded;
  } finally {
    if (saved === undefined) delete process.env.DEMO_FAULTS;
    else process.env.DEMO_FAULTS = saved;
  }
}

function interceptorsOf(handler: unknown): unknown[] {
  return (Reflect.getMetadata(INTERCEPTORS_METADATA, handler as object) as unknown[]) ?? [];
}

describe('@WithDemoFaults()', () => {
  it('attaches no hook to the route when the process starts without DEMO_FAULTS=1', () => {
    const loaded = loadWith(undefined);
    expect(interceptorsOf(loaded.create)).not.toContain(loaded.DemoFaultsInterceptor);
    // @Tenant(), @Body(), @Res(): @DemoFault() binds nothing, so no pipe runs for it.
    expect(loaded.createParameters).toBe(3);
    // A config asking for faults the routes cannot honour is refused, not half applied.
    expect(() => loaded.register(true)).toThrow(/DEMO_FAULTS=1/);
    expect(() => loaded.register(false)).not.toThrow();
  });

  it('attaches the hook with DEMO_FAULTS=1', () => {
    const loaded = loadWith('1');
    expect(interceptorsOf(loaded.create)).toContain(loaded.DemoFaultsInterceptor);
    expect(loaded.createParameters).toBe(4);
    expect(() => loaded.register(true)).not.toThrow();
  });
});
