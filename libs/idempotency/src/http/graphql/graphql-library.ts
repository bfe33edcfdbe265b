import type * as Graphql from 'graphql';

/** The parts of `graphql` the library uses. */
export type GraphqlLibrary = Pick<
  typeof Graphql,
  'GraphQLError' | 'Kind' | 'OperationTypeNode' | 'print'
>;

let loaded: GraphqlLibrary | undefined;

/**
 * `graphql`, loaded on the first GraphQL request: it is an optional peer, and an app without
 * it (REST only) must load the library all the same. By then the app has loaded it: this is
 * the same copy its schema uses.
 */
export function graphqlLibrary(): GraphqlLibrary {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, loaded only on the GraphQL path
  return (loaded ??= require('graphql') as GraphqlLibrary);
}
