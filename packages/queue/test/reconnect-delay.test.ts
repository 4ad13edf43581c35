import { reconnectDelay } from '../src/broker';

describe('reconnectDelay', () => {
  afterEach(() => jest.restoreAllMocks());

  it('When reconnects keep failing, then the wait doubles from the first delay, spread by ± 20 %, never beyond the longest', () => {
    const policy = { initialDelayMs: 200, maxDelayMs: 10_000 };
    jest.spyOn(Math, 'random').mockReturnValue(0.5);
    expect([1, 2, 3, 4, 5, 6, 7, 30].map((attempt) => reconnectDelay(policy, attempt))).toEqual([
      200, 400, 800, 1600, 3200, 6400, 8333, 8333,
    ]);
    jest.spyOn(Math, 'random').mockReturnValue(0);
    expect(reconnectDelay(policy, 1)).toBe(160);
    jest.spyOn(Math, 'random').mockReturnValue(0.9999);
    expect(reconnectDelay(policy, 1)).toBe(240);
    expect(reconnectDelay(policy, 30)).toBeLessThanOrEqual(10_000);
  });
});
