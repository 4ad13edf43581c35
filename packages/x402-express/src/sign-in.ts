import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import {
  buildSIWxSchema,
  parseSIWxHeader,
  SIGN_IN_WITH_X,
  validateSIWxMessage,
  verifySIWxSignature,
  type SIWxExtension,
  type SIWxPayload,
} from '@x402/extensions/sign-in-with-x';
import { AppError, isAppError } from '@repo/errors';
import type { X402Network } from '@repo/schemas';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import type { PaidAccess, PaymentKind, SignInRecords } from '@repo/x402-ledger';
import { reasonOf } from './responses';

/** The request header carrying a sign-in proof (base64 JSON of the signed SIWX message). */
export const SIGN_IN_HEADER = SIGN_IN_WITH_X;

/** Default seconds a 402's sign-in challenge may be signed and presented in. */
export const SIGN_IN_CHALLENGE_SECONDS = 300;

/**
 * The gateway's `signInWithX` option: the x402 `sign-in-with-x` extension on Solana (docs/payments.md,
 * "Signing in instead of paying again").
 */
export interface SignInWithX {
  /** Single-use nonces and the payments of a wallet, in the ledger's database. */
  records: SignInRecords;
  /**
   * Seconds after a payment's verification during which its payer, signed in, gets the same request
   * again without paying, per endpoint kind (`sync`: the Data API, `async`: a compute job's status);
   * 0: no access without paying.
   */
  accessWindowSeconds: Readonly<Record<PaymentKind, number>>;
  /**
   * Whether a replay of a stored answer (a used payment presented again) needs a sign-in proof from
   * the payer: without one, or from another wallet, it is a 402 and nothing is replayed.
   */
  requiredForReplay: boolean;
  /** The challenge's `statement`, shown by wallets. */
  statement?: string;
  /** Seconds a challenge may be signed and presented in (`expirationTime`; default 300). */
  challengeSeconds?: number;
  /**
   * Limits the sign-in proofs checked, asked once a proof's header is parsed and before its signature
   * is checked or anything is read (each check costs an Ed25519 verification and a database read);
   * absent: no limit.
   */
  guard?: SignInGuard;
}

/** Which limit refused a sign-in proof: per client (IPv4 address, IPv6 /64) or per claimed wallet. */
export type SignInLimit = 'client' | 'address';

/**
 * Decides whether a sign-in proof may be checked (docs/payments.md, "Signing in instead of paying
 * again"): `ip` the client's address (`req.ip`), `address` the wallet the proof claims (not yet
 * checked), `network` the request's. Refused: the seconds until the limit's window ends (at least 1).
 * Its failures become 500s: a limit that cannot be read refuses nothing silently.
 */
export type SignInGuard = (attempt: {
  ip: string | undefined;
  address: string;
  network: X402Network;
}) => Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number; limit: SignInLimit }>;

/** The message of a sign-in refused by each limit, given the seconds to wait. */
const SIGN_IN_REFUSALS: Readonly<Record<SignInLimit, (seconds: number) => string>> = {
  client: (s) => `Too many sign-in proofs from this client; retry in ${s} s`,
  address: (s) => `Too many sign-in proofs for this wallet; retry in ${s} s`,
};

/** A request served to its payer without paying again ({@link SignInWithX.accessWindowSeconds}). */
export interface SignedInAccess extends PaidAccess {
  /** The wallet that signed in, the payment's payer. */
  payer: string;
}

/**
 * The origin a sign-in is bound to: the gateway's `publicBaseUrl`, else the request's protocol and
 * host (which only a deployment that knows its public origin can trust: production sets it).
 * `undefined` when those make no URL (a hostile `Host`): the request then gets no challenge.
 */
export function signInOriginOf(req: Request, publicBaseUrl: string | undefined): URL | undefined {
  try {
    return new URL(publicBaseUrl ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  } catch {
    return undefined;
  }
}

/**
 * A fresh `sign-in-with-x` declaration for a 402's `extensions` (x402 v2, "sign-in-with-x"): the
 * domain and URI of `origin` (`path`, the request's path and query, on it), a random 128-bit nonce, the time
 * of issue and an expiry `challengeSeconds` later, and the request's Solana network as the one chain
 * (Ed25519, SIWS).
 */
export function signInChallenge(
  options: SignInWithX,
  origin: URL,
  path: string,
  network: X402Network,
): SIWxExtension {
  const uri = signInUri(origin, path);
  const { nonce, issuedAt, expirationTime } = freshSignIn(challengeMsOf(options));
  return {
    info: {
      domain: origin.host,
      uri,
      ...(options.statement ? { statement: options.statement } : {}),
      version: '1',
      nonce,
      issuedAt,
      expirationTime,
      resources: [uri],
    },
    supportedChains: [{ chainId: CAIP2_NETWORKS[network], type: 'ed25519', signatureScheme: 'siws' }],
    schema: buildSIWxSchema(),
  };
}

/**
 * What differs between two sign-in challenges of one URL (docs/payments.md, "Signing in instead of
 * paying again"): a random 128-bit nonce from the CSPRNG (32 hex digits), the time of issue and the
 * expiry `challengeMs` milliseconds later (ISO 8601 in UTC, milliseconds included).
 */
export interface FreshSignIn {
  nonce: string;
  issuedAt: string;
  expirationTime: string;
}

// Random bytes for nonces, drawn from the CSPRNG 4 KiB at a time (one call costs about as much as
// 256 nonces' worth of slicing), each byte handed out once.
const NONCE_BYTES = 16;
let noncePool = Buffer.alloc(0);
let noncePoolAt = 0;

/** A new 128-bit nonce in hex, from `randomBytes` (never the same bytes twice). */
function nextNonce(): string {
  if (noncePoolAt + NONCE_BYTES > noncePool.length) {
    noncePool = randomBytes(256 * NONCE_BYTES);
    noncePoolAt = 0;
  }
  const nonce = noncePool.toString('hex', noncePoolAt, noncePoolAt + NONCE_BYTES);
  noncePoolAt += NONCE_BYTES;
  return nonce;
}

/** A new {@link FreshSignIn}: every 402's challenge has its own, whichever path sends it. */
export function freshSignIn(challengeMs: number): FreshSignIn {
  const now = Date.now();
  return {
    nonce: nextNonce(),
    issuedAt: new Date(now).toISOString(),
    expirationTime: new Date(now + challengeMs).toISOString(),
  };
}

/**
 * The challenge's `uri` (and its one `resources` entry): `path` (the request's path and query) on
 * `origin`, appended, never resolved (`//host/...` stays a path of `origin`), as a URL serialises it.
 */
export function signInUri(origin: URL, path: string): string {
  const text = origin.origin + (path.startsWith('/') ? path : `/${path}`);
  try {
    return new URL(text).toString();
  } catch {
    return `${origin.origin}/`;
  }
}

function challengeMsOf(options: SignInWithX): number {
  return (options.challengeSeconds ?? SIGN_IN_CHALLENGE_SECONDS) * 1000;
}

/** A base58 Solana address (32 bytes). */
const SOLANA_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** A refused sign-in: a 402 whose `details.reason` names why (and whose `PAYMENT-REQUIRED` has a new challenge). */
function refuse(reason: string, message: string): never {
  throw new AppError('payment_required', message, { details: { reason } });
}

/**
 * Checks the request's sign-in proof (the `SIGN-IN-WITH-X` header): parsed with
 * `@x402/extensions` (`parseSIWxHeader`), for the request's network, its domain and URI on `origin`,
 * issued at most `challengeSeconds` ago and not expired (`validateSIWxMessage`), its Ed25519
 * signature valid for its address (`verifySIWxSignature`). Its nonce is used only once the proof
 * would be granted something ({@link SignedIn.useNonce}), so that proofs of wallets that paid for
 * nothing leave no rows.
 *
 * @returns the wallet that signed, and the use of its nonce
 * @throws AppError `payment_required` (402) with `details.reason`: `siwx_required` (no proof),
 *   `invalid_siwx_header` (not base64 JSON of a proof), `invalid_siwx_unsupported_chain` (another
 *   chain than the request's network), `invalid_siwx_address` (not a base58 Solana address), the extension's own codes (`invalid_siwx_domain_mismatch`,
 *   `invalid_siwx_uri_mismatch`, `invalid_siwx_expired`, `invalid_siwx_issued_at_too_old`,
 *   `invalid_siwx_signature`, ...); `rate_limited` (429, `Retry-After`, `details: { reason:
 *   "siwx_rate_limited", limit }`) when {@link SignInWithX.guard} refuses the proof, before it is checked
 */
export async function verifySignIn(
  req: Request,
  options: SignInWithX,
  origin: URL,
  network: X402Network,
): Promise<SignedIn> {
  const header = req.get(SIGN_IN_HEADER);
  if (header === undefined || header.trim() === '')
    return refuse(
      'siwx_required',
      'Sign in with the wallet that paid (the SIGN-IN-WITH-X header) to get this again',
    );
  let payload: SIWxPayload;
  try {
    payload = parseSIWxHeader(header.trim());
  } catch {
    return refuse('invalid_siwx_header', 'The SIGN-IN-WITH-X header is not base64 JSON of a sign-in proof');
  }
  if (payload.chainId !== CAIP2_NETWORKS[network] || payload.type !== 'ed25519')
    return refuse(
      'invalid_siwx_unsupported_chain',
      `The sign-in proof must be signed for ${CAIP2_NETWORKS[network]} (ed25519)`,
    );
  // Checked before the limits count it: an address is a limit's key (and a Solana key is 32 bytes).
  if (!SOLANA_ADDRESS.test(payload.address))
    return refuse('invalid_siwx_address', "The sign-in proof's address is not a Solana wallet address");
  const decision = await options.guard?.({ ip: req.ip, address: payload.address, network });
  if (decision && !decision.allowed)
    throw new AppError('rate_limited', SIGN_IN_REFUSALS[decision.limit](decision.retryAfterSeconds), {
      details: { reason: 'siwx_rate_limited', limit: decision.limit },
      headers: { 'Retry-After': String(decision.retryAfterSeconds) },
    });
  const maxAge = challengeMsOf(options);
  const validation = await validateSIWxMessage(payload, origin, { maxAge });
  if (!validation.isValid) return refuse(validation.invalidReason, validation.invalidMessage);
  const verification = await verifySIWxSignature(payload);
  if (!verification.isValid) return refuse(verification.invalidReason, verification.invalidMessage);
  const address = verification.payer;
  // A proof older than maxAge is refused anyway: its nonce need not be kept longer.
  const expiresAt = new Date(new Date(payload.issuedAt).getTime() + maxAge);
  return {
    address,
    useNonce: async () => {
      if (!(await options.records.useNonce(payload.nonce, address, expiresAt)))
        refuse('invalid_siwx_nonce', 'This sign-in proof was used already; sign the new challenge');
    },
  };
}

/** A verified sign-in proof ({@link verifySignIn}). */
export interface SignedIn {
  /** The wallet that signed (base58). */
  address: string;
  /**
   * Records the proof's nonce as used, once across replicas.
   * @throws AppError `payment_required` (402) with `details.reason: "invalid_siwx_nonce"` when it was used before
   */
  useNonce(): Promise<void>;
}

/**
 * The access a signed-in request gets without paying (docs/payments.md, "Signing in instead of paying
 * again"): the proof is checked ({@link verifySignIn}), then the payer's latest completed payment of
 * this very request (endpoint, network, request hash) verified within the access window of `kind`.
 *
 * @throws AppError `payment_required` (402) as {@link verifySignIn}, with `details.reason:
 *   "siwx_no_access"` when the wallet paid for no such request within the window, or
 *   `invalid_siwx_nonce` when the proof was used before
 */
export async function signedInAccess(
  req: Request,
  options: SignInWithX,
  request: { origin: URL; network: X402Network; endpoint: string; kind: PaymentKind; requestHash: string },
): Promise<SignedInAccess> {
  const signedIn = await verifySignIn(req, options, request.origin, request.network);
  const payer = signedIn.address;
  const windowSeconds = options.accessWindowSeconds[request.kind];
  const access =
    windowSeconds > 0
      ? await options.records.paidAccess({
          payer,
          network: request.network,
          endpoint: request.endpoint,
          requestHash: request.requestHash,
          since: new Date(Date.now() - windowSeconds * 1000),
        })
      : undefined;
  if (!access)
    return refuse(
      'siwx_no_access',
      `This wallet has not paid for this request within the last ${windowSeconds} s; pay for it`,
    );
  await signedIn.useNonce();
  return { ...access, payer };
}

/**
 * Checks that a replay of a used payment comes from its payer (docs/payments.md, "Signing in instead of
 * paying again"): a valid sign-in proof ({@link verifySignIn}) by `payer`.
 *
 * @param onRefused told of a refusal's reason (`details.reason`, else the error's code) before it is thrown
 * @throws AppError `payment_required` (402) as {@link verifySignIn}, or with `details.reason:
 *   "siwx_not_payer"` when another wallet signed in, or `invalid_siwx_nonce` when the proof was used before
 */
export async function requirePayerSignIn(
  req: Request,
  options: SignInWithX,
  origin: URL,
  network: X402Network,
  payer: string | null,
  onRefused?: (reason: string) => void,
): Promise<void> {
  try {
    const signedIn = await verifySignIn(req, options, origin, network);
    if (payer === null || signedIn.address !== payer)
      refuse('siwx_not_payer', 'Only the wallet that paid gets this payment answered again');
    await signedIn.useNonce();
  } catch (error) {
    onRefused?.(isAppError(error) ? reasonOf(error) : 'other');
    throw error;
  }
}
