// GraphQL is an optional peer: a REST-only app has neither package. Any require of them while
// the root entry loads fails here.
jest.mock('graphql', () => {
  throw new Error('graphql was loaded by the root entry');
});
jest.mock('@nestjs/graphql', () => {
  throw new Error('@nestjs/graphql was loaded by the root entry');
});

describe('the root entry without graphql installed', () => {
  it('loads, interceptor and decorator included, without requiring graphql', () => {
    const entry = jest.requireActual<typeof import('../../index')>('../../index');
    expect(typeof entry.IdempotencyInterceptor).toBe('function');
    expect(typeof entry.Idempotent).toBe('function');
    expect(entry.IdempotencyGraphQLErrorCode.keyReused).toBe('IDEMPOTENCY_KEY_REUSED');
  });
});
