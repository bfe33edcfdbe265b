import { hash } from 'node:crypto';
import type {
  FragmentDefinitionNode,
  GraphQLResolveInfo,
  OperationDefinitionNode,
  SelectionSetNode,
} from 'graphql';
import { canonicalJson } from '../fingerprint';
import type { GraphqlLibrary } from './graphql-library';

// Apollo caches parsed documents, so one operation node serves every request of that text:
// printed once.
const printedOperations = new WeakMap<OperationDefinitionNode, string>();

/**
 * SHA-256 (hex) of what makes two mutation requests "the same": the operation in its printed form
 * with the fragments it uses (so whitespace, comments and the document's other operations do not
 * count), its variables as GraphQL coerced them (defaults filled in), the operation name, and the
 * fingerprinted headers; RFC 8785 canonical JSON, with the body's bounds on nesting and numbers.
 */
export function operationFingerprint(
  graphql: GraphqlLibrary,
  info: GraphQLResolveInfo,
  headers: Record<string, string | undefined>,
): string {
  let document = printedOperations.get(info.operation);
  if (document === undefined) {
    document = printOperation(graphql, info.operation, info.fragments);
    printedOperations.set(info.operation, document);
  }
  const canonical = canonicalJson({
    operationName: info.operation.name?.value ?? null,
    document,
    variables: info.variableValues,
    headers,
  });
  return hash('sha256', canonical, 'hex');
}

function printOperation(
  graphql: GraphqlLibrary,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
): string {
  const used = [...usedFragments(graphql, operation.selectionSet, fragments)].sort();
  return [operation, ...used.map((name) => fragments[name])]
    .map((node) => graphql.print(node))
    .join('\n\n');
}

/** Names of the fragments a selection set spreads, transitively; a loop, not recursion. */
function usedFragments(
  graphql: GraphqlLibrary,
  root: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
): Set<string> {
  const names = new Set<string>();
  const pending: SelectionSetNode[] = [root];
  for (let set = pending.pop(); set; set = pending.pop()) {
    for (const selection of set.selections) {
      if (selection.kind === graphql.Kind.FRAGMENT_SPREAD) {
        const name = selection.name.value;
        const fragment = Object.hasOwn(fragments, name) ? fragments[name] : undefined;
        if (names.has(name) || !fragment) continue;
        names.add(name);
        pending.push(fragment.selectionSet);
      } else if (selection.selectionSet) {
        pending.push(selection.selectionSet);
      }
    }
  }
  return names;
}
