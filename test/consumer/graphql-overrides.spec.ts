import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** The `overrides` block docs/graphql.md tells a user on Node 20 to copy. */
function documentedOverrides(): unknown {
  const docs = read('docs/graphql.md');
  const section = docs.slice(docs.indexOf('**On Node 20**'));
  const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/graphql.md has no overrides block after "On Node 20"');
  return (JSON.parse(`{${block}}`) as { overrides: unknown }).overrides;
}

function overridesOf(path: string): Record<string, unknown> {
  return (JSON.parse(read(path)) as { overrides: Record<string, unknown> }).overrides;
}

// The consumer apps install what the docs say, so the block a user copies is the one the
// consumer tests run (Nest 11 with CommonJS, Nest 12 with ES modules, where a mismatched pair
// fails as @nestjs/apollo loads).
describe('the GraphQL overrides of docs/graphql.md', () => {
  it.each([
    'test/consumer/fixture/nest11.package.json',
    'test/consumer/fixture/nest12.package.json',
  ])('are the overrides of %s', (fixture) => {
    expect(overridesOf(fixture)).toEqual(documentedOverrides());
  });

  it("are the repository's own for @apollo/server", () => {
    const documented = documentedOverrides() as Record<string, unknown>;
    expect(overridesOf('package.json')['@apollo/server']).toEqual(documented['@apollo/server']);
  });
});
