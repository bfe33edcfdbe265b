// Jest `setupFiles`: each worker draws its ports from a stripe of its own. The OS hands the same
// free port to processes that ask in the same instant, and a test's health check could then be
// answered by another worker's app. Processes the tests start pick from the OS's range, which
// the stripes leave out.
import { usePortStripe } from '#tools/embedded-postgres';

const STRIPES = 8;
usePortStripe((Number(process.env.JEST_WORKER_ID ?? 1) - 1) % STRIPES, STRIPES);
