// Jest `setupFiles`: runs in each worker before any test module loads. The demo attaches its
// route-level fault hooks when its controllers load, and only with DEMO_FAULTS=1 (see
// apps/payments-api/src/faults/with-demo-faults.decorator.ts); the in-process test apps enable
// faults in their config, so the hooks must be there. Processes the tests start get their own
// environment (test/support/app-process.ts).
process.env.DEMO_FAULTS = '1';
