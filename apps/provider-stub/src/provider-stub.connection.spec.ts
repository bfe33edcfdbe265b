import { parse } from 'pg-connection-string';
import { providerStubConnection } from './provider-stub.connection';

/** What node-postgres makes of the URL and the config together: the URL's options win. */
const optionsSeen = (databaseUrl: string) => {
  const { url, extra } = providerStubConnection(databaseUrl);
  return { ...extra, ...parse(url) }.options;
};

describe('providerStubConnection', () => {
  it.each([
    ['a plain URL', 'postgres://app:secret@db.example:5432/payments'],
    ['a postgresql:// URL with sslmode', 'postgresql://app@db.example/payments?sslmode=require'],
    ['a percent-encoded password', 'postgres://app:p%40ss%2Fw@db.example/payments'],
    ['a socket in ?host= with an empty host', 'postgres://app@/payments?host=/cloudsql/x'],
    ['no user and no host', 'postgres:///payments?host=/var/run/postgresql'],
  ])('sets the search_path for %s, and changes nothing else', (_, databaseUrl) => {
    expect(optionsSeen(databaseUrl)).toBe('-c search_path=provider_stub');
    const { options: _options, ...rest } = parse(providerStubConnection(databaseUrl).url);
    expect(rest).toEqual(parse(databaseUrl));
  });

  it("keeps the URL's own options, before the search_path", () => {
    expect(
      optionsSeen(
        'postgres://app@/payments?host=/cloudsql/x&options=-c%20statement_timeout%3D60000',
      ),
    ).toBe('-c statement_timeout=60000 -c search_path=provider_stub');
    expect(optionsSeen('postgres://app@db/payments?options=-c%20lock_timeout%3D5s')).toBe(
      '-c lock_timeout=5s -c search_path=provider_stub',
    );
  });
});
