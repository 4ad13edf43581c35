import { SESSION_CONFIG_DEFAULTS, SessionConfigInput } from '../src/index';

describe('session_config', () => {
  it('When omitted or empty, then the defaults apply', () => {
    expect(SessionConfigInput.parse(undefined)).toEqual(SESSION_CONFIG_DEFAULTS);
    expect(SessionConfigInput.parse({})).toEqual(SESSION_CONFIG_DEFAULTS);
    expect(SessionConfigInput.parse('')).toEqual(SESSION_CONFIG_DEFAULTS);
  });

  it('When given as an object, then values are enum-checked and extra properties refused', () => {
    expect(SessionConfigInput.parse({ profile: 'Solo', budget: '$5K' })).toMatchObject({
      profile: 'Solo',
      budget: '$5K',
      timeline: '4-8 weeks',
    });
    expect(SessionConfigInput.safeParse({ budget: '$7K' }).success).toBe(false);
    expect(SessionConfigInput.safeParse({ profile: 'Solo', colour: 'red' }).success).toBe(false);
  });

  it('When given as lines, then each value is checked against the same enums', () => {
    const parsed = SessionConfigInput.parse(
      'Profile: Solo\nBudget: $1K\nTimeline: 2 weeks\nRevenue_threshold: $1M+/year\nSignal: ex-banker',
    );
    expect(parsed).toEqual({
      profile: 'Solo',
      budget: '$1K',
      timeline: '2 weeks',
      revenue_threshold: '$1M+/year',
      founder_signal: 'ex-banker',
    });
    expect(SessionConfigInput.safeParse('Budget: lots').success).toBe(false);
    expect(SessionConfigInput.safeParse('Colour: red').success).toBe(false);
    expect(SessionConfigInput.safeParse('Budget: $1K\nBudget: $5K').success).toBe(false);
  });

  it('When the string form is over 5000 chars or the signal over 2000, then it is refused', () => {
    expect(SessionConfigInput.safeParse('Signal: ' + 'x'.repeat(5000)).success).toBe(false);
    expect(SessionConfigInput.safeParse({ founder_signal: 'x'.repeat(2001) }).success).toBe(false);
    expect(SessionConfigInput.safeParse('Signal: ' + 'x'.repeat(2001)).success).toBe(false);
  });
});
