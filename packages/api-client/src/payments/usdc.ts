// USDC amounts (6 decimals) as decimal strings and atomic units: the paying client's own, from the
// Solana-free `@repo/x402-solana/client-core`, so importing the package loads no Solana library.
export { formatAtomic, parseUsdc, USDC_DECIMALS } from '@repo/x402-solana/client-core';
