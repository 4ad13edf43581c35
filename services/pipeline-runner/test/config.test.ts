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
