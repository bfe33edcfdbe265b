/**
 * The run's PostgreSQL, which Jest's global set-up (an embedded one, or `DATABASE_URL` when set)
 * hands every worker through the environment.
 */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (globalSetup)');
  return url;
}
