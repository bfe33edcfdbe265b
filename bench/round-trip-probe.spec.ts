import { formatRoundTripCosts, type RoundTripCosts, roundTripProblems } from './round-trip-probe';

describe('the round-trip probe', () => {
  const costs: RoundTripCosts = {
    operations: 1000,
    pooledQueryUs: 40,
    heldClientQueryUs: 30,
    redisCommandUs: 5,
  };

  it("prints each kind's cost and what two of them come to", () => {
    const text = formatRoundTripCosts(costs);
    expect(text).toContain('a query checked out of a pg pool 40.0 µs');
    expect(text).toContain('a query on a pg client already held 30.0 µs');
    expect(text).toContain("a command of the peer's Redis adapter 5.0 µs");
    expect(text).toContain('about 60 µs of its app CPU over (b)');
    expect(text).toContain("the peer's two Redis commands to about 10 µs");
    expect(formatRoundTripCosts({ ...costs, redisCommandUs: undefined })).toContain(
      'no Redis given',
    );
  });

  it('refuses a figure that is missing, zero or not a number', () => {
    expect(roundTripProblems(costs, true)).toEqual([]);
    expect(roundTripProblems({ ...costs, redisCommandUs: undefined }, false)).toEqual([]);
    expect(
      roundTripProblems(
        { ...costs, heldClientQueryUs: Number.NaN, redisCommandUs: undefined },
        true,
      ),
    ).toEqual([
      'round-trip probe: a query on a held pg client costs NaN µs',
      'round-trip probe: a Redis command costs undefined µs',
    ]);
  });
});
