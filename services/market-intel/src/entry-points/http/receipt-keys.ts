import { z } from 'zod';
import { contractRouter, errorResponse, type ContractRouter } from '@repo/service-kit';
import { receiptKeysHandler } from '@repo/x402-express';
import type { ReceiptIssuer } from '@repo/x402-core/receipts';

/** One published Ed25519 key: an OKP JWK whose `kid` is the JWS `kid` of what it signed. */
export const ReceiptKey = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().describe('base64url of the 32-byte public key'),
  kid: z.string().describe('did:web:<host>#<RFC 7638 thumbprint>, the JWS header kid'),
  alg: z.literal('EdDSA'),
  use: z.literal('sig'),
});

/** `GET /.well-known/jwks.json`: the signing key first, then the previous ones still published. */
export const ReceiptKeySetBody = z.object({ keys: z.array(ReceiptKey) });

/** `GET /.well-known/did.json`: the did:web document of the same keys. */
export const DidDocumentBody = z.object({
  '@context': z.array(z.string()),
  id: z.string().describe('did:web of the public origin'),
  verificationMethod: z.array(
    z.object({
      id: z.string(),
      type: z.literal('JsonWebKey2020'),
      controller: z.string(),
      publicKeyJwk: ReceiptKey,
    }),
  ),
  assertionMethod: z.array(z.string()),
});

const UNKNOWN_PARAMETER = errorResponse('invalid query: the operation takes no parameter');

/**
 * The keys that sign the 402's offers and the paid answers' receipts (docs/payments.md, "Signed offers
 * and receipts"): `GET /.well-known/jwks.json` (JWKS) and `GET /.well-known/did.json` (did:web), free,
 * both listing the signing key and `X402_RECEIPT_PREVIOUS_KEYS`. Mount the router at the root.
 */
export function receiptKeysRouter(issuer: ReceiptIssuer, publicBaseUrl: string | undefined): ContractRouter {
  const serve = receiptKeysHandler(issuer, publicBaseUrl);
  return contractRouter()
    .route(
      {
        method: 'get',
        path: '/.well-known/jwks.json',
        operationId: 'getReceiptKeys',
        summary: 'Public keys of signed offers and receipts (JWKS, free)',
        description:
          'The Ed25519 keys whose JWS signatures the x402 offer-receipt extension carries: the current signing key, then the previous ones (their receipts still verify). Match a receipt’s JWS `kid` with a key’s `kid`.',
        tags: ['Discovery'],
        responses: {
          '200': { description: 'the key set', body: ReceiptKeySetBody },
          '400': UNKNOWN_PARAMETER,
        },
      },
      serve,
    )
    .route(
      {
        method: 'get',
        path: '/.well-known/did.json',
        operationId: 'getDidDocument',
        summary: 'did:web document of the offer and receipt keys (free)',
        description:
          'The did:web DID document of the public origin, listing the same keys as `/.well-known/jwks.json` as JsonWebKey2020 verification methods; `@x402/extensions` resolves a receipt’s `kid` with it.',
        tags: ['Discovery'],
        responses: {
          '200': { description: 'the DID document', body: DidDocumentBody },
          '400': UNKNOWN_PARAMETER,
        },
      },
      serve,
    );
}
