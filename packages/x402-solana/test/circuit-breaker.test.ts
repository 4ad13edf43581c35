import { isBrokenCircuitError } from 'cockatiel';
import { createCircuitBreaker, type CircuitBreaker } from '../src/index';

/** Whether the breaker let a call through (`true`) or failed it fast (`false`); the call fails or succeeds as told. */
async function call(breaker: CircuitBreaker, outcome: 'fail' | 'succeed'): Promise<boolean> {
  let reached = false;
  try {
    await breaker.execute(async () => {
      reached = true;
      if (outcome === 'fail') throw new Error('RPC unreachable');
    });
  } catch (err) {
    if (isBrokenCircuitError(err)) return false;
  }
  return reached;
}

describe('CircuitBreaker', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('When failures reach the threshold, then calls fail fast until the open time passes, then one probe decides', async () => {
    const breaker = createCircuitBreaker({ failureThreshold: 3, openMs: 1_000 });
    for (let i = 0; i < 2; i++) expect(await call(breaker, 'fail')).toBe(true);
    expect(breaker.state).toBe('closed');
    expect(await call(breaker, 'fail')).toBe(true);
    expect(breaker.state).toBe('open');
    expect(await call(breaker, 'succeed')).toBe(false);

    jest.setSystemTime(1_000);
    let endProbe = (): void => undefined;
    const probe = breaker.execute(
      () =>
        new Promise<void>((_resolve, reject) => {
          endProbe = () => reject(new Error('still down'));
        }),
    );
    expect(breaker.state).toBe('half_open');
    expect(await call(breaker, 'succeed')).toBe(false); // one probe at a time
    endProbe();
    await expect(probe).rejects.toThrow('still down');
    expect(breaker.state).toBe('open');
    expect(await call(breaker, 'succeed')).toBe(false);

    jest.setSystemTime(2_000);
    expect(await call(breaker, 'succeed')).toBe(true);
    expect(breaker.state).toBe('closed');
    expect(await call(breaker, 'succeed')).toBe(true);
  });

  it('When a success comes between failures, then the count starts over', async () => {
    const breaker = createCircuitBreaker({ failureThreshold: 2 });
    await call(breaker, 'fail');
    await call(breaker, 'succeed');
    await call(breaker, 'fail');
    expect(breaker.state).toBe('closed');
  });
});
