import { apiLinks, type LlmsTxt } from '@repo/service-kit';
import { COMPUTE_PRICES, DATA_PRICES } from '../../domain/prices';
import { usdc } from './contract-parts';

/**
 * market-intel's `/llms.txt` (README, "Endpoints" and "MCP"): what it sells at which price, how to pay with
 * x402 over HTTP and over MCP, and where the OpenAPI document, the reference page and `/mcp` are.
 */
export const MARKET_INTEL_LLMS_TXT: LlmsTxt = {
  title: 'market-intel',
  summary:
    'Venture intelligence for software agents, paid per call in USDC on Solana with x402: cached market ' +
    'scans (gaps, pain clusters, trends, keywords, a daily brief) and long multi-agent compute jobs ' +
    '(a 5-round ideation, a 6-persona debate).',
  details: [
    'No account and no key: the payment is the credential. Prices per call (USDC, 6 decimals): ' +
      `gaps ${usdc(DATA_PRICES.gaps)}, pain clusters ${usdc(DATA_PRICES.painClusters)}, trends ` +
      `${usdc(DATA_PRICES.trends)}, keywords ${usdc(DATA_PRICES.keywords)}, brief ${usdc(DATA_PRICES.brief)}, ` +
      `forge/ideate ${usdc(COMPUTE_PRICES.forge)}, prove/debate ${usdc(COMPUTE_PRICES.prove)}. ` +
      'Sectors, health and jobs are free.',
    'Paying over HTTP, in three steps: (1) call the endpoint; it answers 402 with the x402 `Error402` body ' +
      '(push mode: send a USDC `transferChecked` to `payTo` yourself) and a `PAYMENT-REQUIRED` header (the ' +
      'official x402 v2 exact SVM scheme: any official x402 client pays it); (2) pay; (3) send the same ' +
      'request again with `X-PAYMENT` (push: base64 JSON with `payload.txSignature`) or `PAYMENT-SIGNATURE` ' +
      '(official). The answer carries `PAYMENT-RESPONSE`. The same payment on the same request replays the ' +
      'answer; on another endpoint it is refused. `?network=devnet` selects the test network.',
    "Evidence: the 402 carries the route's offer and every paid answer a receipt, both signed (x402 " +
      '`offer-receipt`, JWS EdDSA; the receipt in `PAYMENT-RESPONSE` `extensions["offer-receipt"].info.receipt`: ' +
      'transaction, payer, amount, request hash, SHA-256 of the body, time); the keys are at ' +
      '`/.well-known/jwks.json` and `/.well-known/did.json`. Keep the receipt with the body.',
    'Paying over MCP: a paid tool called without payment returns a tool error whose structured content is ' +
      'the x402 `PaymentRequired`; call it again with the same arguments and the `PaymentPayload` in ' +
      '`_meta["x402/payment"]`; the result carries `_meta["x402/payment-response"]`.',
    'Compute jobs answer 202 with a `jobId`; poll `GET /api/v1/jobs/{jobId}` (or the `get_job` tool), or give ' +
      'a `webhook_url`. Check `GET /api/v1/health` first: no payment is asked while the compute upstreams are ' +
      'down. Errors are `{ "error", "code", "details"?, "requestId" }`.',
  ],
  sections: [
    {
      name: 'API',
      links: [
        ...apiLinks(
          'free tools list_sectors, get_health, get_job; paid tools scout_gaps, scout_pain_clusters, ' +
            'scout_trends, scout_keywords, scout_brief, forge_ideate, prove_debate',
        ),
        { title: 'Sectors', url: '/api/v1/sectors', notes: 'free; call before a sector-filtered paid call' },
      ],
    },
    {
      name: 'Optional',
      links: [{ title: 'Health', url: '/api/v1/health', notes: 'compute upstreams; free' }],
    },
  ],
};
