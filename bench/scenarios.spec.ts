import { chosenScenarios, scenarioIds } from './scenarios';

describe('choosing scenarios', () => {
  it('reads scenario letters and refuses an unknown one', () => {
    expect(scenarioIds('a,b,,j')).toEqual(['a', 'b', 'j']);
    expect(scenarioIds('')).toEqual([]);
    expect(() => scenarioIds('a,z')).toThrow('unknown scenario "z"');
  });

  it('gives the scenarios in the order asked, and those of the peer on Redis only with Redis', () => {
    expect(chosenScenarios('run', ['c', 'a'], false).map(({ id }) => id)).toEqual(['c', 'a']);
    expect(() => chosenScenarios('run', ['n'], false)).toThrow('needs a Redis');
    expect(chosenScenarios('run', ['n'], true).map(({ id }) => id)).toEqual(['n']);
  });
});
