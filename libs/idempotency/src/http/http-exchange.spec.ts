import type { HttpRequestLike } from './http-exchange';
import { requestQuery } from './http-exchange';

/** An Express 5 request: `query` is a getter on its prototype, counted here. */
function expressRequest(url: string): { request: HttpRequestLike; reads: () => number } {
  let reads = 0;
  const prototype = {
    get query(): unknown {
      reads += 1;
      return { parsed: url };
    },
  };
  const request = Object.create(prototype) as HttpRequestLike;
  Object.assign(request, { method: 'POST', url, headers: {} });
  return { request, reads: () => reads };
}

describe('requestQuery', () => {
  it('answers the empty query without reading `query` when the URL has no query string', () => {
    const { request, reads } = expressRequest('/v1/orders');
    expect(requestQuery(request)).toEqual({});
    expect(reads()).toBe(0);
  });

  it('reads `query` when the URL has a query string, even an empty one', () => {
    for (const url of ['/v1/orders?mode=a', '/v1/orders?']) {
      const { request, reads } = expressRequest(url);
      expect(requestQuery(request)).toEqual({ parsed: url });
      expect(reads()).toBe(1);
    }
  });

  it("takes a query the request holds as its own property as it is (Fastify's, a hook's)", () => {
    const request: HttpRequestLike = {
      method: 'POST',
      url: '/v1/orders',
      headers: {},
      query: { set: 'by a hook' },
    };
    expect(requestQuery(request)).toEqual({ set: 'by a hook' });
  });
});
