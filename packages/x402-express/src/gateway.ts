import type { ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import type { PaymentVerifier, ResourceDiscovery, VerifiedPayment } from '@repo/x402-core';
import type {
  AttemptCounter,
  PaymentClaim,
  PaymentIdentifiers,
  PaymentKind,
  PaymentLedger,
} from '@repo/x402-ledger';
import type { ReceiptIssuer } from '@repo/x402-core/receipts';
import type { ExactSvmSettler } from '@repo/x402-solana';
import type { PaymentEventListener } from './events';
import type { SignedInAccess, SignInWithX } from './sign-in';

/** What every paid route of a service shares: the ledger, one verifier per offered network, hooks. */
export interface PaymentGateway {
  /** The payment ledger (usually a {@link PrismaPaymentLedger} over the service's Prisma client). */
  ledger: PaymentLedger;
  /**
   * The x402 `payment-identifier` store, in the ledger's database (`PrismaPaymentIdentifiers`):
   * `PAYMENT-REQUIRED` then declares the extension, and an official-scheme payment carrying an
   * identifier is settled at most once per payer and identifier, every retry of the same request
   * getting its answer (docs/payments.md, "Retrying safely: payment identifiers"). Absent: the
   * extension is neither declared nor read.
   */
  identifiers?: PaymentIdentifiers;
  /** The verifier of each offered network; its `asset` and `payTo` are advertised in the 402. */
  verifiers: Partial<Record<X402Network, PaymentVerifier>>;
  /**
   * The official exact SVM scheme per network (fee payer configured): offered in `PAYMENT-REQUIRED`
   * and settling `payload.transaction` payments. A network without one offers push mode only.
   */
  settlers?: Partial<Record<X402Network, ExactSvmSettler>>;
  /**
   * Asked before each official-scheme settlement (a refused transaction still costs the fee payer
   * its fee): rate limits per payer wallet and per client, shared by replicas. Absent: no limit.
   */
  settlementGuard?: SettlementGuard;
  /** Optional metrics hook. */
  onPaymentEvent?: PaymentEventListener;
  /** Public origin for `resource` URLs, e.g. `https://api.example.com`; default: from the request. */
  publicBaseUrl?: string;
  /**
   * Signed offers and receipts (x402 `offer-receipt`, docs/payments.md, "Signed offers and
   * receipts"): every `PAYMENT-REQUIRED` carries the signed offer of its requirement, and every 2xx
   * paid answer a signed receipt in `PAYMENT-RESPONSE` and `X-PAYMENT-RESPONSE`, stored with the
   * answer. Serve its keys with `receiptKeysHandler`. Absent: neither is signed.
   */
  receipts?: ReceiptIssuer;
  /**
   * Told of each paid answer of a synchronous endpoint once the ledger stored it (or replayed it), just
   * before it is sent: the hot path's {@link HotPath.onAnswerStored} remembers it for replays, so that
   * nobody captures and parses the answer a second time. A listener's failure is swallowed.
   */
  onAnswerStored?: AnswerStoredListener;
  /**
   * Request-bound payments (docs/payments.md, "Request-bound payments"): every requirement carries
   * `extra.reference`, derived from the request with `secret`, and a push payment carrying another
   * request's reference is refused without being consumed; with `required`, a push payment must carry
   * one. Absent: no reference is offered or checked.
   */
  references?: { secret: string | Uint8Array; required?: boolean };
  /**
   * Bounds the RPC cost of push payments that do not verify (random or foreign signatures): e.g. a
   * limit per client address shared by replicas. Refused: `429 rate_limited` with `Retry-After`;
   * nothing is consumed. Absent: no limit.
   */
  verificationGuard?: VerificationGuard;
  /**
   * The x402 `sign-in-with-x` extension (docs/payments.md, "Signing in instead of paying again"): every
   * `PAYMENT-REQUIRED` carries a fresh challenge bound to `publicBaseUrl` (else the request's origin),
   * a payer who signs it gets a request it paid for again within the access window without paying,
   * and, with `requiredForReplay`, a used payment's answer (or its job id) is given again only to its
   * payer signed in. Only networks with the official offer (`settlers`) declare it. Absent: off.
   */
  signInWithX?: SignInWithX;
}

/** A client's push payment attempt: `ip` is the client address (`req.ip`). */
export interface VerificationAttempt {
  ip: string | undefined;
  network: X402Network;
}

/**
 * A limit on push payments that do not verify, per client: `check` counts an attempt before a new
 * push payment is verified on chain (refused: `429 rate_limited` with `Retry-After` seconds, no RPC
 * call), and `verified` gives it back once the payment verified. What stays counted are the attempts
 * in flight and those that failed (each cost RPC calls), so a concurrent flood is bounded too.
 */
export interface VerificationGuard {
  /** Counts an attempt of the client, or refuses it. */
  check(
    attempt: VerificationAttempt,
  ): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }>;
  /** Gives back the attempt of a payment that verified. */
  verified(attempt: VerificationAttempt): Promise<void>;
  /**
   * Optional: where `check` and `verified` count, as a counter row of the ledger's database, so that
   * the ledger counts the attempt in its claim statement and gives it back in its verified mark: two
   * PostgreSQL round trips fewer per push payment (README, "The paid path's statements"). It must name
   * the very row `check` and `verified` use, with the same limit and window: they still count the
   * sightings ({@link recordPaymentSighting}), give back the attempt of an RPC failure, and stand in
   * for a ledger that does not count.
   */
  counter?(attempt: VerificationAttempt): AttemptCounter;
}

/**
 * Decides whether an official-scheme settlement may go ahead, once its claim is held (docs/payments.md,
 * "Paying with an official x402 client"): `ip` is the client address (`req.ip`), `payer` the wallet whose
 * Ed25519 signature of the transaction was checked (so nobody spends another wallet's limits),
 * `source` the token account its transfer debits (absent when it comes from a lookup table).
 * Allowed: `release`, when given, is called once the settlement ended, whatever its outcome (an
 * in-flight slot is given back). Refused: the answer is `429 rate_limited` with `Retry-After`
 * (seconds) and `details.limit` (`client`, `payer`, or `payer_in_flight`: another settlement of this
 * payer and source is still running); nothing is sent and the claim is dropped.
 */
export type SettlementGuard = (settlement: {
  ip: string | undefined;
  payer: string | undefined;
  source: string | undefined;
  network: X402Network;
}) => Promise<
  | { allowed: true; release?: () => Promise<void> }
  | { allowed: false; retryAfterSeconds: number; limit: SettlementLimit }
>;

/** Which limit refused a settlement (`details.limit` of the 429). */
export type SettlementLimit = 'client' | 'payer' | 'payer_in_flight';

/** The price and description of one paid route. */
export interface PaidRoute {
  /** Price in atomic USDC units (6 decimals), e.g. `100000n` for 0.10 USDC. */
  amountAtomic: bigint;
  /** What is sold, advertised in the requirements. */
  description: string;
  /** MIME type of the paid answer; default `"application/json"`. */
  mimeType?: string;
  /**
   * Advertised seconds to pay in the official scheme's offer (its transaction must land while its
   * blockhash is valid, about 60 to 90 s); default 60. The push requirement advertises its
   * verifier's `maxTimeoutSeconds` (the freshness window it enforces) when the verifier has one.
   */
  maxTimeoutSeconds?: number;
  /**
   * Endpoint identity stored with the payment, e.g. `"GET /api/v1/scout/gaps"`. Default:
   * the method and the matched route path (`req.baseUrl + req.route.path`).
   */
  endpoint?: string;
  /**
   * How to call the resource and what it answers, for x402 discovery: `outputSchema` in the v1
   * requirement and the `bazaar` extension in `PAYMENT-REQUIRED` (docs/payments.md, "Discovery").
   */
  discovery?: ResourceDiscovery;
}

/**
 * Options of {@link requirePayment}: a gateway and a route. `deferVerifiedMark` (default `true`) folds
 * the verified mark into the stored answer's statement (README, "The paid path's statements"); `false`
 * writes it on its own before the handler runs, as `acceptPayment` does: the same answers and the same
 * rows, one statement more per fresh payment (docs/architecture.md, "Fast paths").
 */
export type RequirePaymentOptions = PaymentGateway & PaidRoute & { deferVerifiedMark?: boolean };

/**
 * Options of {@link acceptPayment}: a gateway, a route, and the endpoint kind; `deferVerifiedMark`
 * leaves the verified mark to the caller's completion ({@link processPayment}'s option of that name).
 */
export type AcceptPaymentOptions = PaymentGateway &
  PaidRoute & {
    kind: PaymentKind;
    deferVerifiedMark?: boolean;
    /**
     * Answers a request without a payment whose payer signed in and paid for it within the access
     * window (`signInWithX`): `access` names the payment (and its job). Absent: a sign-in proof is
     * ignored and the request gets its 402.
     */
    onSignedIn?: (access: SignedInAccess, req: Request, res: Response) => void | Promise<void>;
  };

/** A payment accepted by {@link acceptPayment}: proven and claimed by this request. */
export interface AcceptedPayment {
  /** The verified payment (payer, amount, slot...). */
  payment: VerifiedPayment;
  /** The claim to finish with `ledger.complete`, `ledger.completeWithJob` or `ledger.releaseLease`. */
  claim: PaymentClaim;
  /**
   * With `deferVerifiedMark`: the verification the ledger does not hold yet, to pass to the
   * completion (`ledger.complete`, `ledger.releaseLease`) or to `ledger.markVerified`.
   */
  unrecorded?: VerifiedPayment;
  /** The requirements that were paid. */
  requirements: PaymentRequirements;
  /**
   * With the gateway's `receipts`: signs the receipt of the answer (its status and body) into its
   * payment response headers, before it is stored (`receiptSigner`).
   */
  signReceipt?: (status: number, body: Buffer) => Promise<void>;
}

/** The request object carries the accepted payment for the route handler. */
export interface PaidRequestLocals {
  /** The verified payment of this request (set by {@link requirePayment}). */
  x402Payment?: VerifiedPayment;
  /** The earlier payment of a payer who signed in instead of paying (set by {@link requirePayment}). */
  x402Access?: SignedInAccess;
}

/**
 * A paid answer as the ledger holds it (the one answer of its payment): what `requirePayment`'s
 * capture stored, or what the ledger replayed.
 */
export interface PaidAnswer {
  /** The network the payment was made on. */
  network: X402Network;
  /** HTTP status. */
  status: number;
  /** Response headers as stored (lower-case names, without per-connection ones such as `date`). */
  headers: Record<string, string | string[]>;
  /** The body as sent. */
  body: Buffer;
  /**
   * Whether it is answered again only to its payer signed in (the gateway's
   * `signInWithX.requiredForReplay`): whoever else presents the payment gets a 402, so it must not be
   * replayed without the proof checked (the hot path keeps none of these).
   */
  payerOnly?: boolean;
}

/**
 * The `onAnswerStored` option of {@link PaymentGateway}: told of `res`'s paid answer, at most once per
 * response, before it is sent.
 */
export type AnswerStoredListener = (answer: PaidAnswer, res: ServerResponse) => void;
