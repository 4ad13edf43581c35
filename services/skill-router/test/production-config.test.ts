import { configRefusal } from '@repo/service-kit/testing';
import { loadConfig } from '../src/config';

// Production refuses insecure settings at boot, naming each (README, "Security").
const refusal = (env: NodeJS.ProcessEnv) => configRefusal(loadConfig, env);

describe('skill-router configuration in production', () => {
  it('When production runs with development settings, then it refuses to boot naming each', () => {
    const env = {
      NODE_ENV: 'production',
      SSRF_ALLOWLIST: '127.0.0.1',
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x',
    };
    expect(refusal(env).problems).toEqual([
      'DATABASE_URL: points at 127.0.0.1, a loopback address, in production',
      'SSRF_ALLOWLIST: must be empty in production (it lets requests reach private addresses)',
    ]);
  });

  it('When development runs with the same settings, then it boots', () => {
    expect(
      loadConfig({ SSRF_ALLOWLIST: '127.0.0.1', DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' })
        .NODE_ENV,
    ).toBe('development');
  });

  it('When production has a remote database, then it boots', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x',
    });
    expect(config.NODE_ENV).toBe('production');
  });
});

describe('skill-router CORS and local databases in production', () => {
  const remote = { NODE_ENV: 'production', DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x' };

  it('When CORS_ORIGINS holds * or a plain HTTP origin, then production refuses to boot naming each', () => {
    expect(refusal({ ...remote, CORS_ORIGINS: 'http://agents.example.com, *' }).problems).toEqual([
      'CORS_ORIGINS: http://agents.example.com is plain HTTP; production allows https:// origins only',
      'CORS_ORIGINS: "*" is not allowed in production; list the https:// origins that may call',
    ]);
    expect(loadConfig({ ...remote, CORS_ORIGINS: 'https://agents.example.com' }).NODE_ENV).toBe('production');
  });

  it.each([
    ['postgresql://svc:pw@127.1:5432/x', 'points at 127.1, a loopback address'],
    ['postgresql://svc:pw@[::]:5432/x', 'points at [::], the unspecified address'],
    ['postgresql://svc:pw@localhost.:5432/x', 'points at localhost., a loopback address'],
  ])('When DATABASE_URL is %s, then production refuses it', (url, why) => {
    expect(refusal({ ...remote, DATABASE_URL: url }).problems).toEqual([
      expect.stringContaining(`DATABASE_URL: ${why}`),
    ]);
  });
});
