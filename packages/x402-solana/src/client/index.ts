// @repo/x402-solana/client — the paying side of x402 on Solana (docs/payments.md "Paying for data (x402)" and
// "Paying with an official x402 client"): push mode and the official exact SVM scheme, paid with a
// Keypair, a wallet adapter or a @solana/kit signer. Its errors, amounts and body reading are those of
// the Solana-free `@repo/x402-solana/client-core`, re-exported here.
export { payForRequirements, checkTokenFunds, connectionFor, isUnreachable } from './pay';
export type { PayForRequirementsInput, PayForRequirementsOptions, CheckTokenFundsInput } from './pay';
export {
  createOfficialPayment,
  decodePaymentRequired,
  decodeSettleResponse,
  officialOfferOf,
  paymentBuildError,
  PaymentRequiredHeader,
} from './official';
export type { CreateOfficialPaymentInput, CreateOfficialPaymentOptions, OfficialPayment } from './official';
export { fetchWithPayment } from './fetch';
export type {
  FetchWithPaymentOptions,
  FetchWithPaymentSettings,
  FetchWithPaymentResult,
  PaymentMade,
  PaymentMode,
} from './fetch';
export { resolvePaymentSigner, signerOf } from './signer';
export type {
  PaymentSigner,
  PaymentSignerInput,
  PayingWallet,
  WalletAdapterSigner,
  KitPaymentSigner,
} from './signer';
// The whole of client-core (errors, amounts, body reading), so both entries throw the same classes.
export * from '../client-core';
export { encodePaymentHeader, decodePaymentResponse } from '@repo/x402-core';
