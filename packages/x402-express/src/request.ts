import type { Request, Response } from 'express';
import { AppError, requestIdOf } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import { paymentRequiredBody, X402_VERSION, X402_VERSION_HEADER } from '@repo/x402-core';

/**
 * Answers 402 with {@link paymentRequiredBody} and the header `x402-version: 1`.
 *
 * @param req the request (for the request id)
 * @param res the response
 * @param accepts the ways to pay
 * @param error human-readable reason
 * @param details optional machine-readable detail, e.g. `{ reason: "stale" }`
 */
export function sendPaymentRequired(
  req: Request,
  res: Response,
  accepts: PaymentRequirements[],
  error: string,
  details?: Record<string, unknown>,
): void {
  res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
  res.status(402).json(paymentRequiredBody(accepts, error, requestIdOf(req), details));
}

/**
 * Resolves the x402 network of a request from its `network` query parameter (docs/payments.md, "Devnet":
 * `devnet` selects the test network, default is the main network). Accepted values:
 * absent or empty, `solana`, `mainnet` → `"solana"`; `devnet`, `solana-devnet` → `"solana-devnet"`.
 * The raw URL is read, so a validation middleware that rewrote `req.query` does not matter.
 *
 * @param req the request
 * @throws AppError `invalid_request` (400) for any other value or a repeated parameter
 */
export function networkOfRequest(req: Request): X402Network {
  return networkOfQuery(new URL(req.originalUrl || req.url, 'http://localhost').searchParams);
}

/**
 * {@link networkOfRequest} of a request's parsed query string.
 * @throws AppError `invalid_request` (400) as {@link networkOfRequest}
 */
export function networkOfQuery(query: URLSearchParams): X402Network {
  const values = query.getAll('network');
  if (values.length > 1) {
    throw new AppError('invalid_request', 'query parameter network must be given at most once', {
      details: [{ path: 'query.network', message: 'repeated' }],
    });
  }
  const value = values[0] ?? '';
  if (value === '' || value === 'solana' || value === 'mainnet') return 'solana';
  if (value === 'devnet' || value === 'solana-devnet') return 'solana-devnet';
  throw new AppError(
    'invalid_request',
    `query parameter network must be "devnet" or absent, got "${value.slice(0, 40)}"`,
    {
      details: [{ path: 'query.network', message: 'must be "devnet" or absent' }],
    },
  );
}

/**
 * The absolute URL of a request, for `PaymentRequirements.resource`: `publicBaseUrl` (when the service
 * knows its public origin) or the request's protocol and host (honouring `trust proxy`), followed by
 * the original path and query.
 *
 * @param req the request
 * @param publicBaseUrl optional origin such as `https://api.example.com`
 */
export function resourceUrlOf(req: Request, publicBaseUrl?: string): string {
  const base = publicBaseUrl
    ? publicBaseUrl.replace(/\/+$/, '')
    : `${req.protocol}://${req.get('host') ?? 'localhost'}`;
  return `${base}${req.originalUrl || req.url}`;
}
