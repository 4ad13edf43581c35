import { randomBytes } from 'node:crypto';
import { ConfigError } from '../src/config';
import { assertProductionReady, estimatedEntropyBits, productionProblems } from '../src/production';

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

describe('productionProblems: hosts that reach this machine', () => {
  const remote = (value: string) => productionProblems([{ kind: 'remote', name: 'X_URL', value }]);

  it.each([
    ['postgresql://u:p@localhost./db', 'localhost.', 'a loopback address'],
    ['postgresql://u:p@db.localhost/db', 'db.localhost', 'a loopback address'],
    ['postgresql://u:p@LOCALHOST:5432/db', 'LOCALHOST', 'a loopback address'],
    ['postgresql://u:p@%6cocalhost/db', '%6cocalhost', 'a loopback address'],
    ['postgresql://u:p@ip6-localhost/db', 'ip6-localhost', 'a loopback address'],
    ['postgresql://u:p@127.1/db', '127.1', 'a loopback address'],
    ['postgresql://u:p@2130706433/db', '2130706433', 'a loopback address'],
    ['postgresql://u:p@0x7f.1/db', '0x7f.1', 'a loopback address'],
    ['postgresql://u:p@[::ffff:127.0.0.1]/db', '[::ffff:7f00:1]', 'a loopback address'],
    ['amqps://svc:pw@127.0.0.1.:5671', '127.0.0.1.', 'a loopback address'],
    ['http://127.1:8899', '127.0.0.1', 'a loopback address'],
    ['postgresql://u:p@[::]/db', '[::]', 'the unspecified address'],
    ['postgresql://u:p@0/db', '0', 'the unspecified address'],
    ['postgresql://u:p@0.0.0.0/db', '0.0.0.0', 'the unspecified address'],
    ['http://0/', '0.0.0.0', 'the unspecified address'],
  ])('When a remote URL is %s, then its host %s is named as %s', (value, host, what) => {
    const problems = remote(value);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^X_URL: points at ${host.replace(/[.[\]]/g, '\\$&')}, ${what}`));
  });

  it('When a PostgreSQL URL names a remote host but its host parameter is loopback, then the parameter is named', () => {
    expect(remote('postgresql://u:p@db.internal:5432/db?host=127.0.0.1')).toEqual([
      'X_URL: points at 127.0.0.1, a loopback address, in production',
    ]);
    // pg takes the last one; every one is checked.
    expect(remote('postgresql://u:p@db.internal/db?host=localhost&host=db.internal')).toEqual([
      'X_URL: points at localhost, a loopback address, in production',
    ]);
  });

  it('When a PostgreSQL URL connects through a Unix socket or names no host, then it is refused', () => {
    expect(remote('postgresql://u:p@db.internal/db?host=/var/run/postgresql')).toEqual([
      'X_URL: points at the Unix socket /var/run/postgresql, a connection to this machine, in production',
    ]);
    expect(remote('postgresql://u:p@%2Fvar%2Frun%2Fpostgresql/db')).toEqual([
      'X_URL: points at the Unix socket /var/run/postgresql, a connection to this machine, in production',
    ]);
    expect(remote('postgresql:///db')).toEqual([
      'X_URL: names no host, so the client connects to this machine, in production',
    ]);
    expect(remote('postgresql://u:p@/db')).toEqual([
      'X_URL: names no host, so the client connects to this machine, in production',
    ]);
  });

  it('When a remote URL cannot be parsed, then it is refused rather than passed', () => {
    expect(remote('amqp://u:p@')).toEqual(['X_URL: is not a URL whose host can be checked']);
  });

  it('When a URL names a remote host, a private address or a name that merely contains localhost, then nothing is wrong', () => {
    for (const value of [
      'postgresql://u:p@db.internal:5432/x?host=db2.internal',
      'postgresql://u:p@10.0.0.5/x',
      'postgresql://u:p@[fd00::5]/x',
      'amqps://svc:pw@localhost.example.com:5671',
      'https://notlocalhost/rpc',
      'https://rpc.example.com/?host=127.0.0.1',
    ])
      expect(remote(value)).toEqual([]);
  });

  it('When the broker URL is loopback in another form, then both its host and its default account are named', () => {
    expect(
      productionProblems([{ kind: 'broker', name: 'AMQP_URL', value: 'amqp://guest:guest@127.1' }]),
    ).toEqual([
      'AMQP_URL: points at 127.1, a loopback address, in production',
      "AMQP_URL: uses RabbitMQ's default guest:guest credentials in production",
    ]);
  });
});

describe('productionProblems: secrets that are not random', () => {
  const secret = (value: string) => productionProblems([{ kind: 'secret', name: 'K_SECRET', value }]);
  const notRandom =
    'K_SECRET: does not look random (repeated or too few distinct characters); use 32 random bytes (e.g. openssl rand -base64 32)';

  it.each([
    ['a x 32', 'a'.repeat(32)],
    ['ab x 16', 'ab'.repeat(16)],
    ['password x 4', 'password'.repeat(4)],
    ['password x 16', 'password'.repeat(16)],
    ['Password1! x 4', 'Password1!'.repeat(4)],
    ['0-9a-f x 2', '0123456789abcdef'.repeat(2)],
    ['31 x and a y', `${'x'.repeat(31)}y`],
    ['the hex of 16 random bytes', randomBytes(16).toString('hex')],
  ])('When the secret is %s, then it is refused without being echoed', (_what, value) => {
    const problems = secret(value);
    expect(problems).toEqual([notRandom]);
    expect(problems.join('\n')).not.toContain(value);
  });

  it('When secrets are 32 random bytes in base64, base64url or hex, then every one passes', () => {
    for (let i = 0; i < 200; i += 1) {
      const bytes = randomBytes(32);
      for (const encoding of ['base64', 'base64url', 'hex'] as const)
        expect(secret(bytes.toString(encoding))).toEqual([]);
    }
  });

  it('When the estimate is asked of plain cases, then it counts frequencies times the repeating unit', () => {
    expect(estimatedEntropyBits('')).toBe(0);
    expect(estimatedEntropyBits('a'.repeat(32))).toBe(0);
    expect(estimatedEntropyBits('ab'.repeat(16))).toBe(2);
    expect(estimatedEntropyBits('abc'.repeat(10))).toBeCloseTo(3 * Math.log2(3), 10);
    expect(estimatedEntropyBits('0123456789abcdef')).toBe(64);
  });
});

describe('productionProblems: explicit settings, switches and CORS origins', () => {
  it('When a setting production must give is unset or blank, then it is named with why; set, it passes', () => {
    const check = (value: string | undefined) =>
      productionProblems([{ kind: 'set', name: 'CAP', value, why: 'the most jobs a day' }]);
    expect(check(undefined)).toEqual(['CAP: must be set explicitly in production (the most jobs a day)']);
    expect(check(' ')).toEqual(['CAP: must be set explicitly in production (the most jobs a day)']);
    expect(check('0')).toEqual([]);
  });

  it('When a switch production needs is turned off, then it is named; on or unset passes', () => {
    const check = (value: boolean | undefined) =>
      productionProblems([{ kind: 'enabled', name: 'COOKIE_SECURE', value, why: 'cookies over HTTP' }]);
    expect(check(false)).toEqual(['COOKIE_SECURE: must not be false in production (cookies over HTTP)']);
    expect(check(true)).toEqual([]);
    expect(check(undefined)).toEqual([]);
  });

  it('When CORS origins hold * or plain HTTP origins, then each is named; https origins pass', () => {
    const check = (value: string | undefined) =>
      productionProblems([{ kind: 'cors', name: 'CORS_ORIGINS', value }]);
    expect(check('*')).toEqual([
      'CORS_ORIGINS: "*" is not allowed in production; list the https:// origins that may call',
    ]);
    expect(check('https://app.example.com, http://app.example.com,HTTP://localhost:3000')).toEqual([
      'CORS_ORIGINS: http://app.example.com is plain HTTP; production allows https:// origins only',
      'CORS_ORIGINS: HTTP://localhost:3000 is plain HTTP; production allows https:// origins only',
    ]);
    expect(check('https://app.example.com,https://admin.example.com')).toEqual([]);
    expect(check(undefined)).toEqual([]);
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
