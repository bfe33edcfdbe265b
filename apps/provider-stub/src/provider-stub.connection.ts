/** The stub keeps its tables in a schema of its own, on whichever database it is given. */
export const PROVIDER_STUB_SCHEMA = 'provider_stub';

/**
 * A named connection: `npm start` runs the stub in the payments API's process, and nestjs-cls
 * keeps one TransactionHost per connection name there (`@Transactional()` looks it up so).
 */
export const PROVIDER_STUB_CONNECTION = 'provider-stub';

const SEARCH_PATH_OPTION = `-c search_path=${PROVIDER_STUB_SCHEMA}`;

/**
 * The database URL with the stub's schema as its `search_path`, so that unqualified names (the
 * stub's and the library's) resolve there. In the URL's `options` parameter, after whatever
 * options the URL already carries: node-postgres lets a URL's `options` override the config's,
 * so an app whose `DATABASE_URL` sets a `statement_timeout` that way would otherwise put the
 * stub's tables in the API's schema.
 */
export function providerStubConnection(databaseUrl: string): {
  url: string;
  extra: { options?: string };
} {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    // Not a URL node-postgres could read options from either: the config's own option holds.
    return { url: databaseUrl, extra: { options: SEARCH_PATH_OPTION } };
  }
  const given = url.searchParams.get('options');
  url.searchParams.set('options', given ? `${given} ${SEARCH_PATH_OPTION}` : SEARCH_PATH_OPTION);
  return { url: url.toString(), extra: {} };
}
