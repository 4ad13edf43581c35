// @repo/x402-solana/client-core — the Solana-free part of the paying client (README "The client"):
// its errors, USDC amounts and body reading. It imports no Solana or x402 library, so a caller that
// must stay light until it pays (agent-pay's free calls, the api-client package's entry) can use the
// same classes and helpers as `@repo/x402-solana/client`, which re-exports them.
// Every export of these three modules is public.
export * from './errors';
export * from './amounts';
export * from './body';
