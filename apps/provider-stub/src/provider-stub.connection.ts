/** The stub keeps its tables in a schema of its own, on whichever database it is given. */
export const PROVIDER_STUB_SCHEMA = 'provider_stub';

/**
 * A named connection: `npm start` runs the stub in the payments API's process, and nestjs-cls
 * keeps one TransactionHost per connection name there (`@Transactional()` looks it up so).
 */
export const PROVIDER_STUB_CONNECTION = 'provider-stub';
