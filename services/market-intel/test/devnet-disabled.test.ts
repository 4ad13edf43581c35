import { Error402 } from '@repo/schemas';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { startHarness, type Harness } from './support/harness';

// X402_DEVNET_ENABLED=false takes devnet out of the offer (docs/payments.md, "Devnet").
let h: Harness;

beforeAll(async () => {
  h = await startHarness('market_intel_devnet_disabled_test', { env: { X402_DEVNET_ENABLED: 'false' } });
});
afterAll(() => h?.close());

describe('devnet turned off', () => {
  it('When devnet is turned off, then ?network=devnet is a 400 and asks for no payment', async () => {
    const res = await fetch(`${h.baseUrl}/api/v1/scout/gaps?network=devnet`);
    expect(res.status).toBe(400);
    expect(res.headers.get('payment-required')).toBeNull();
    expect(await res.json()).toMatchObject({
      code: 'invalid_request',
      error: expect.stringContaining('solana-devnet'),
    });
  });

  it('When devnet is turned off, then the main network is still offered, in the body and in PAYMENT-REQUIRED', async () => {
    const gaps = await fetch(`${h.baseUrl}/api/v1/scout/gaps`);
    expect(gaps.status).toBe(402);
    // The push requirement, then the official scheme in v1 form.
    expect(Error402.parse(await gaps.json()).accepts.map((a) => a.network)).toEqual(['solana', 'solana']);
    const offer = JSON.parse(
      Buffer.from(gaps.headers.get('payment-required') ?? '', 'base64').toString('utf8'),
    );
    expect(offer.accepts.map((a: { network: string }) => a.network)).toEqual([CAIP2_NETWORKS.solana]);
  });
});
