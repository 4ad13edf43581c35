import { CircuitBreaker } from '../src/index';

describe('CircuitBreaker', () => {
  it('When failures reach the threshold, then calls fail fast until the open time passes, then one probe decides', () => {
    let now = 0;
    const breaker = new CircuitBreaker({ failureThreshold: 3, openMs: 1_000, now: () => now });
    for (let i = 0; i < 2; i++) {
      expect(breaker.tryAcquire()).toBe(true);
      breaker.failed();
    }
    expect(breaker.state).toBe('closed');
    expect(breaker.tryAcquire()).toBe(true);
    breaker.failed();
    expect(breaker.state).toBe('open');
    expect(breaker.tryAcquire()).toBe(false);

    now = 1_000;
    expect(breaker.state).toBe('half_open');
    expect(breaker.tryAcquire()).toBe(true);
    expect(breaker.tryAcquire()).toBe(false); // one probe at a time
    breaker.failed();
    expect(breaker.state).toBe('open');

    now = 2_000;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.succeeded();
    expect(breaker.state).toBe('closed');
    expect(breaker.tryAcquire()).toBe(true);
  });

  it('When a success comes between failures, then the count starts over', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 2 });
    breaker.failed();
    breaker.succeeded();
    breaker.failed();
    expect(breaker.state).toBe('closed');
  });
});
