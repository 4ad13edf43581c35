import { configRefusal } from '@repo/service-kit/testing';
import { loadConfig, scoutFetchSettings } from '../src/config';

describe('runner configuration', () => {
  it('When SSRF_ALLOWLIST is unset or blank, then scout sources may reach public addresses only', () => {
    expect(scoutFetchSettings(loadConfig({})).ssrfAllowlist).toEqual([]);
    expect(scoutFetchSettings(loadConfig({ SSRF_ALLOWLIST: '  ' })).ssrfAllowlist).toEqual([]);
  });

  it('When SSRF_ALLOWLIST lists hosts, IP addresses and CIDR blocks, then the scout fetch settings get them', () => {
    const config = loadConfig({ SSRF_ALLOWLIST: '127.0.0.1, Feeds.Local ,10.0.0.0/8,[::1]' });
    expect(scoutFetchSettings(config).ssrfAllowlist).toEqual([
      '127.0.0.1',
      'feeds.local',
      '10.0.0.0/8',
      '::1',
    ]);
  });

  it('When an SSRF_ALLOWLIST entry is invalid, then loading fails naming the variable and the entry', () => {
    expect(() => loadConfig({ SSRF_ALLOWLIST: '127.0.0.1,10.0.0.0/99' })).toThrow(
      /SSRF_ALLOWLIST: .*"10\.0\.0\.0\/99" is not a valid CIDR block/,
    );
  });
});

describe('runner configuration of the LLM and the search provider', () => {
  const refusal = (env: NodeJS.ProcessEnv) => configRefusal(loadConfig, env);

  it('When LLM_BASE_URL is set without LLM_MODEL and a search provider lacks its setting, then loading fails naming each', () => {
    expect(
      refusal({ LLM_BASE_URL: 'http://127.0.0.1:11434/v1', SEARCH_PROVIDER: 'searxng' }).problems,
    ).toEqual([
      'LLM_MODEL is required when LLM_BASE_URL is set',
      'SEARXNG_URL is required with SEARCH_PROVIDER=searxng',
    ]);
    const error = refusal({ SEARCH_PROVIDER: 'tavily' });
    expect(error.message).toBe(
      'Invalid configuration:\n  TAVILY_API_KEY is required with SEARCH_PROVIDER=tavily',
    );
  });

  it('When the LLM and the search provider are complete, then it boots', () => {
    const config = loadConfig({
      LLM_BASE_URL: 'http://127.0.0.1:11434/v1',
      LLM_MODEL: 'llama3',
      SEARCH_PROVIDER: 'tavily',
      TAVILY_API_KEY: 'tvly-key',
    });
    expect(config.SEARCH_PROVIDER).toBe('tavily');
  });
});

describe('runner configuration in production', () => {
  it('When production runs with the default broker and an allowlist, then it refuses to boot naming both', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', SSRF_ALLOWLIST: '127.0.0.1' })).toThrow(
      new RegExp(
        [
          'AMQP_URL: points at 127.0.0.1, a loopback address, in production',
          "AMQP_URL: uses RabbitMQ's default guest:guest credentials in production",
          'SSRF_ALLOWLIST: must be empty in production',
        ].join('[\\s\\S]*'),
      ),
    );
  });

  it.each([
    ['amqps://runner:s3cret@localhost.:5671', 'localhost.'],
    ['amqps://runner:s3cret@mq.localhost:5671', 'mq.localhost'],
    ['amqps://runner:s3cret@[::ffff:127.0.0.1]:5671', '[::ffff:7f00:1]'],
    ['amqps://runner:s3cret@2130706433:5671', '2130706433'],
  ])('When the broker URL is %s, then production refuses it as loopback', (url, host) => {
    expect(() => loadConfig({ NODE_ENV: 'production', AMQP_URL: url })).toThrow(
      `AMQP_URL: points at ${host}, a loopback address, in production`,
    );
  });

  it('When production has its own broker account and no allowlist, then it boots', () => {
    expect(
      loadConfig({ NODE_ENV: 'production', AMQP_URL: 'amqps://runner:s3cret@mq.internal:5671' }).NODE_ENV,
    ).toBe('production');
  });
});
