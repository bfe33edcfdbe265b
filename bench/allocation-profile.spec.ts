import { allocationProfile, type SamplingHeapProfile } from './allocation-profile';
import { byLibraryFunction, byOwner } from './perf-profile';

const LIBRARY = '/app/node_modules/nestjs-pg-idempotency/dist/http/http-request.flow.js';

function node(
  functionName: string,
  url: string,
  selfSize: number,
  children: SamplingHeapProfile['head'][] = [],
): SamplingHeapProfile['head'] {
  return { callFrame: { functionName, url, lineNumber: 9, columnNumber: 0 }, selfSize, children };
}

describe('allocationProfile', () => {
  // (root) > express handle > the library's describe > JSON.stringify (a built-in, no script);
  // (root) > pg's parser > Node's Buffer (core).
  const profile: SamplingHeapProfile = {
    head: node('(root)', '', 0, [
      node('handle', '/app/node_modules/express/lib/router.js', 1000, [
        node('described', LIBRARY, 4000, [node('stringify', '', 6000)]),
        node('', LIBRARY, 500),
      ]),
      node('parse', 'file:///app/node_modules/pg-protocol/dist/parser.js', 0, [
        node('allocate', 'node:buffer', 2000),
      ]),
    ]),
  };

  it('gives bytes per request by the JavaScript they were allocated for', () => {
    const perRequest = allocationProfile(profile, 10);
    expect(Object.fromEntries(byOwner(perRequest))).toEqual({
      // The built-in's bytes count for its caller, Node's core's for the package that called it.
      library: 1050,
      express: 100,
      'pg-protocol': 200,
      all: 1350,
    });
    expect(Object.fromEntries(byLibraryFunction(perRequest))).toEqual({
      'described (http/http-request.flow.js)': 1000,
      '(anonymous) (http/http-request.flow.js)': 50,
      all: 1050,
    });
    expect(perRequest.bySymbol.get('(native) stringify')).toBe(600);
  });

  it('needs a request to divide by', () => {
    expect(() => allocationProfile(profile, 0)).toThrow('at least one request');
  });
});
