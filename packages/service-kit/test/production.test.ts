import { ConfigError } from '../src/config';
import { assertProductionReady, productionProblems } from '../src/production';

// What production refuses to boot with (each service's README, "Security").
describe('productionProblems', () => {
  it.each([
    ['postgresql://postgres@127.0.0.1:5432/db', '127.0.0.1'],
    ['postgresql://postgres@localhost/db', 'localhost'],
    ['http://[::1]:8899', '[::1]'],
    ['http://127.8.9.10:8899', '127.8.9.10'],
  ])('When a remote URL is %s, then it is named as loopback', (value, host) => {
    expect(productionProblems([{ kind: 'remote', name: 'X_URL', value }])).toEqual([
      `X_URL: points at ${host}, a loopback address, in production`,
    ]);
  });

  it('When a remote URL names a real host, then nothing is wrong', () => {
    expect(
      productionProblems([{ kind: 'remote', name: 'X_URL', value: 'postgresql://u:p@db.internal:5432/x' }]),
    ).toEqual([]);
  });

  it('When the broker URL uses guest:guest or no credentials, then each is named; a real account passes', () => {
    expect(
      productionProblems([{ kind: 'broker', name: 'AMQP_URL', value: 'amqp://guest:guest@mq:5672' }]),
    ).toEqual(["AMQP_URL: uses RabbitMQ's default guest:guest credentials in production"]);
    expect(productionProblems([{ kind: 'broker', name: 'AMQP_URL', value: 'amqps://mq.internal' }])).toEqual([
      'AMQP_URL: has no credentials (RabbitMQ then uses its default guest account)',
    ]);
    expect(
      productionProblems([{ kind: 'broker', name: 'AMQP_URL', value: 'amqps://svc:s3cret@mq:5671' }]),
    ).toEqual([]);
  });

  it('When a secret is short, a placeholder, or required and missing, then each is named without its value', () => {
    const problems = productionProblems([
      { kind: 'secret', name: 'A_SECRET', value: 'short-value' },
      { kind: 'secret', name: 'B_SECRET', value: 'CHANGE_ME_but_long_enough_to_pass_the_length' },
      { kind: 'secret', name: 'C_SECRET', value: undefined, required: true },
      { kind: 'secret', name: 'D_SECRET', value: undefined },
    ]);
    expect(problems).toEqual([
      'A_SECRET: must be at least 32 bytes in production (e.g. openssl rand -base64 32)',
      'B_SECRET: still the CHANGE_ME placeholder of the secret template; set a random value',
      'C_SECRET: required in production',
    ]);
    expect(problems.join('\n')).not.toContain('short-value');
  });

  it('When a development allowlist is set, then it is named; empty passes', () => {
    expect(productionProblems([{ kind: 'empty', name: 'SSRF_ALLOWLIST', value: '127.0.0.1' }])).toEqual([
      'SSRF_ALLOWLIST: must be empty in production (it lets requests reach private addresses)',
    ]);
    expect(productionProblems([{ kind: 'empty', name: 'SSRF_ALLOWLIST', value: '' }])).toEqual([]);
  });
});

describe('assertProductionReady', () => {
  const insecure = [{ kind: 'empty' as const, name: 'SSRF_ALLOWLIST', value: 'localhost' }];

  it('When NODE_ENV is production and something is insecure, then it throws a ConfigError naming it', () => {
    expect(() => assertProductionReady('production', insecure)).toThrow(ConfigError);
    expect(() => assertProductionReady('production', insecure)).toThrow(/SSRF_ALLOWLIST: must be empty/);
  });

  it('When NODE_ENV is development or test, then nothing is checked', () => {
    expect(() => assertProductionReady('development', insecure)).not.toThrow();
    expect(() => assertProductionReady('test', insecure)).not.toThrow();
  });
});
