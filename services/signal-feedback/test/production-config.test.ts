import { configRefusal } from '@repo/service-kit/testing';
import { cookieSecure, loadConfig } from '../src/config';

// Production refuses insecure settings at boot, naming each (README, "Configuration").
const refusal = (env: NodeJS.ProcessEnv) => configRefusal(loadConfig, env);

describe('signal-feedback configuration in production', () => {
  it('When production runs with development settings, then it refuses to boot naming each', () => {
    const env = { NODE_ENV: 'production', DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' };
    expect(refusal(env).problems).toEqual([
      'DATABASE_URL: points at 127.0.0.1, a loopback address, in production',
    ]);
  });

  it('When development runs with the same settings, then it boots', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' }).NODE_ENV).toBe(
      'development',
    );
  });

  it('When production has a remote database, then it boots', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x',
    });
    expect(config.NODE_ENV).toBe('production');
  });
});

describe('signal-feedback LLM settings', () => {
  const database = { DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' };

  it.each([
    ['LLM_BASE_URL', { LLM_BASE_URL: 'http://127.0.0.1:11434/v1' }],
    ['LLM_MODEL', { LLM_MODEL: 'llama3' }],
  ])('When only %s is set, then the service refuses to boot naming both variables', (_only, llm) => {
    const error = refusal({ ...database, ...llm });
    expect(error.problems).toEqual([
      'LLM_BASE_URL and LLM_MODEL must be set together (LLM_API_KEY too, unless the endpoint needs none)',
    ]);
    expect(error.message).toMatch(/^Invalid configuration:\n {2}LLM_BASE_URL and LLM_MODEL/);
  });

  it('When both are set, then it boots with them', () => {
    const config = loadConfig({
      ...database,
      LLM_BASE_URL: 'http://127.0.0.1:11434/v1',
      LLM_MODEL: 'llama3',
    });
    expect(config.LLM_MODEL).toBe('llama3');
  });
});

describe('signal-feedback cookies and CORS in production', () => {
  const remote = { NODE_ENV: 'production', DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x' };

  it('When production turns COOKIE_SECURE off, then it refuses to boot naming it', () => {
    expect(refusal({ ...remote, COOKIE_SECURE: 'false' }).problems).toEqual([
      'COOKIE_SECURE: must not be false in production (session cookies would be sent over plain HTTP, without their __Host- prefix)',
    ]);
  });

  it('When CORS_ORIGINS holds * or plain HTTP origins, then production refuses to boot naming each', () => {
    expect(refusal({ ...remote, CORS_ORIGINS: '*,http://dashboard.example.com' }).problems).toEqual([
      'CORS_ORIGINS: "*" is not allowed in production; list the https:// origins that may call',
      'CORS_ORIGINS: http://dashboard.example.com is plain HTTP; production allows https:// origins only',
    ]);
  });

  it('When the database is local in a form other than 127.0.0.1, then production refuses it', () => {
    expect(
      refusal({ ...remote, DATABASE_URL: 'postgresql://svc:pw@db.internal/x?host=/var/run/postgresql' })
        .problems,
    ).toEqual([
      'DATABASE_URL: points at the Unix socket /var/run/postgresql, a connection to this machine, in production',
    ]);
  });

  it('When COOKIE_SECURE is unset, then cookies are Secure in production and not in development', () => {
    expect(loadConfig(remote).COOKIE_SECURE).toBeUndefined();
    expect(cookieSecure(loadConfig(remote))).toBe(true);
    expect(cookieSecure(loadConfig({ DATABASE_URL: remote.DATABASE_URL }))).toBe(false);
  });

  it('When production keeps Secure cookies and https origins, then it boots; development may turn them off', () => {
    const config = loadConfig({
      ...remote,
      COOKIE_SECURE: 'true',
      CORS_ORIGINS: 'https://dashboard.example.com',
    });
    expect(config.COOKIE_SECURE).toBe(true);
    expect(
      loadConfig({ DATABASE_URL: remote.DATABASE_URL, COOKIE_SECURE: 'false', CORS_ORIGINS: '*' })
        .COOKIE_SECURE,
    ).toBe(false);
  });
});

describe('signal-feedback webhooks in production', () => {
  const remote = { NODE_ENV: 'production', DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x' };

  it('When production sets SSRF_ALLOWLIST, then it refuses to boot naming it; development accepts it', () => {
    expect(refusal({ ...remote, SSRF_ALLOWLIST: '127.0.0.1' }).problems).toEqual([
      'SSRF_ALLOWLIST: must be empty in production (it lets requests reach private addresses)',
    ]);
    expect(
      loadConfig({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x', SSRF_ALLOWLIST: '127.0.0.1' })
        .SSRF_ALLOWLIST,
    ).toBe('127.0.0.1');
  });

  it('When PUBLIC_URL is not an http(s) URL, then the service refuses to boot naming it', () => {
    expect(refusal({ ...remote, PUBLIC_URL: 'ftp://feedback.example.com' }).problems.join('\n')).toMatch(
      /PUBLIC_URL/,
    );
  });
});
