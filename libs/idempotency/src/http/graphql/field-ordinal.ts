import type { GraphQLResolveInfo, OperationDefinitionNode, SelectionSetNode } from 'graphql';
import type { GraphqlLibrary } from './graphql-library';

/** Response keys of each field name among an operation's root fields, in the order they run. */
const rootFieldsByName = new WeakMap<OperationDefinitionNode, Map<string, string[]>>();

/**
 * Which of the operation's root fields named `info.fieldName` this is: 1 for the first (the
 * only one, as a rule), 2 for the second `createOrder` of `a: createOrder(…) b: createOrder(…)`.
 * The record's scope takes this, not the alias: a retry that renames the alias reaches the same
 * record, where the fingerprint (which has the alias) refuses it, instead of a new record that
 * runs the resolver again. Fragments spread at the root count where they are spread; `@skip`
 * and `@include` are not read (the fingerprint tells documents with other variables apart).
 */
export function fieldOrdinal(graphql: GraphqlLibrary, info: GraphQLResolveInfo): number {
  let byName = rootFieldsByName.get(info.operation);
  if (byName === undefined) {
    byName = rootFields(graphql, info.operation.selectionSet, info);
    rootFieldsByName.set(info.operation, byName);
  }
  const keys = byName.get(info.fieldName) ?? [];
  const index = keys.indexOf(String(info.path.key));
  // Not found cannot happen for a field GraphQL runs from this operation; after the others if so.
  return index >= 0 ? index + 1 : keys.length + 1;
}

function rootFields(
  graphql: GraphqlLibrary,
  root: SelectionSetNode,
  info: GraphQLResolveInfo,
): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  const seenKeys = new Set<string>();
  const seenFragments = new Set<string>();
  const visit = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === graphql.Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        // Fields of one response key merge into one: counted once, where it first appears.
        if (seenKeys.has(key)) continue;
        seenKeys.add(key);
        const keys = byName.get(selection.name.value);
        if (keys) keys.push(key);
        else byName.set(selection.name.value, [key]);
      } else if (selection.kind === graphql.Kind.INLINE_FRAGMENT) {
        visit(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = Object.hasOwn(info.fragments, name) ? info.fragments[name] : undefined;
        if (seenFragments.has(name) || !fragment) continue;
        seenFragments.add(name);
        visit(fragment.selectionSet);
      }
    }
  };
  visit(root);
  return byName;
}
