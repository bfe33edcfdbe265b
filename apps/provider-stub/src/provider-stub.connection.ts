/** The stub keeps its tables in a schema of its own, on whichever database it is given. */
export const PROVIDER_STUB_SCHEMA = 'provider_stub';

/**
 * A named connection: `npm start` runs the stub in the payments API's process, and nestjs-cls
 * keeps one TransactionHost per connection name there (`@Transactional()` looks it up so).
 */
export const PROVIDER_STUB_CONNECTION = 'provider-stub';

const SEARCH_PATH_OPTION = `-c search_path=${PROVIDER_STUB_SCHEMA}`;

/** Stands in for an empty host while the URL is edited (`postgres://user@/db?host=/socket`). */
const NO_HOST = 'no-host.invalid';

/**
 * The database URL with the stub's schema as its `search_path`, so that unqualified names (the
 * stub's and the library's) resolve there. In the URL's `options` parameter, after whatever
 * options the URL already carries: node-postgres lets a URL's `options` override the config's,
 * so an app whose `DATABASE_URL` sets a `statement_timeout` that way would otherwise put the
 * stub's tables in the API's schema. A URL with an empty host (a socket in `?host=`, as Cloud SQL
 * documents) is read as node-postgres reads it, with a host put in and taken out again.
 */
export function providerStubConnection(databaseUrl: string): {
  url: string;
  extra: { options?: string };
} {
  const emptyHost = /^[a-z]+:\/\/[^/?#]*@\//i.test(databaseUrl);
  let url: URL;
  try {
    url = new URL(emptyHost ? databaseUrl.replace('@/', `@${NO_HOST}/`) : databaseUrl);
  } catch {
    // No URL at all (key=value pairs): node-postgres takes no options from it to override ours.
    return { url: databaseUrl, extra: { options: SEARCH_PATH_OPTION } };
  }
  const given = url.searchParams.get('options');
  url.searchParams.set('options', given ? `${given} ${SEARCH_PATH_OPTION}` : SEARCH_PATH_OPTION);
  const edited = url.toString();
  return { url: emptyHost ? edited.replace(`@${NO_HOST}/`, '@/') : edited, extra: {} };
}
