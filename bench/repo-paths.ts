import { resolve } from 'node:path';

/** The repository root; this file runs from dist/bench/bench/ once compiled. */
export const REPO_ROOT = resolve(__dirname, '../../..');

/** The demo as `npm run build` leaves it. */
export const DEMO_MAIN = resolve(REPO_ROOT, 'dist/apps/payments-api/apps/payments-api/src/main.js');
