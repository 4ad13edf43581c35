// Compose only: starts market-intel against the local ledger. The ledger creates its test USDC mint and
// merchant token account on first start, so their addresses are not known in advance: this asks the
// ledger (`localnet_info`, on each network's RPC path) and sets USDC_MINT, MERCHANT_TOKEN_ACCOUNT and the
// devnet pair when they are unset, then runs the compiled service. Production sets them explicitly.
// It also sets the merchant wallets (MERCHANT_WALLET*, the official scheme's payTo), keeps
// X402_FEE_PAYER_KEYPAIR and X402_REFUND_KEYPAIR only when the ledger's key files are readable (without the
// fee payer, sign-in-with-x is turned off: it travels in the official offer), and draws a random
// WEBHOOK_SECRET and X402_RECEIPT_SIGNING_KEY when none is given (the image runs with NODE_ENV=production,
// which refuses short or placeholder secrets, and a fixed one in this file would be public).
'use strict';

const networks = [
  ['SOLANA_RPC_URL', 'USDC_MINT', 'MERCHANT_TOKEN_ACCOUNT', 'MERCHANT_WALLET'],
  ['SOLANA_DEVNET_RPC_URL', 'USDC_MINT_DEVNET', 'MERCHANT_TOKEN_ACCOUNT_DEVNET', 'MERCHANT_WALLET_DEVNET'],
];

async function localnetInfo(rpcUrl) {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'localnet_info', params: [] }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await response.json();
  if (!body.result) throw new Error(`${rpcUrl}: localnet_info failed: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function main() {
  if (!process.env.WEBHOOK_SECRET?.trim()) {
    process.env.WEBHOOK_SECRET = require('node:crypto').randomBytes(32).toString('base64url');
    process.stderr.write(
      'localnet-env: generated a random WEBHOOK_SECRET (set WEBHOOK_SECRET to choose one)\n',
    );
  }
  if (!process.env.X402_REFERENCE_SECRET?.trim()) {
    // Request-bound payment references (docs/payments.md, "Request-bound payments"): a random key per start.
    process.env.X402_REFERENCE_SECRET = require('node:crypto').randomBytes(32).toString('base64url');
  }
  if (!process.env.X402_RECEIPT_SIGNING_KEY?.trim()) {
    // Signed offers and receipts (docs/payments.md, "Signed offers and receipts"): a key per start.
    process.env.X402_RECEIPT_SIGNING_KEY = require('node:crypto')
      .generateKeyPairSync('ed25519')
      .privateKey.export({ format: 'pem', type: 'pkcs8' })
      .toString();
    process.stderr.write(
      'localnet-env: generated an Ed25519 X402_RECEIPT_SIGNING_KEY (set it to keep receipts verifiable across starts)\n',
    );
  }
  for (const [urlVar, mintVar, accountVar, walletVar] of networks) {
    const rpcUrl = process.env[urlVar];
    if (!rpcUrl || (process.env[mintVar] && process.env[accountVar])) continue;
    const info = await localnetInfo(rpcUrl);
    process.env[mintVar] = info.mint;
    process.env[accountVar] = info.merchantTokenAccount;
    process.env[walletVar] ??= info.merchantOwner;
    process.stderr.write(
      `localnet-env: ${mintVar}=${info.mint} ${accountVar}=${info.merchantTokenAccount} ${walletVar}=${info.merchantOwner}\n`,
    );
  }
  // The official x402 scheme needs the ledger's fee payer key (without it 402s offer push mode only),
  // refunds its refund wallet's key (without it nothing is refunded).
  for (const [name, without] of [
    ['X402_FEE_PAYER_KEYPAIR', 'push mode only'],
    ['X402_REFUND_KEYPAIR', 'no refunds'],
  ]) {
    const file = process.env[name];
    if (!file) continue;
    try {
      require('node:fs').accessSync(file, require('node:fs').constants.R_OK);
    } catch {
      delete process.env[name];
      process.stderr.write(`localnet-env: ${file} is not readable: ${without}\n`);
      // Sign-in-with-x travels in the official offer: without a fee payer it cannot be on.
      if (name === 'X402_FEE_PAYER_KEYPAIR' && process.env.X402_SIGN_IN_WITH_X === undefined) {
        process.env.X402_SIGN_IN_WITH_X = 'false';
        process.stderr.write('localnet-env: no official offer, so X402_SIGN_IN_WITH_X=false\n');
      }
    }
  }
  require(require('node:path').resolve('dist/main.js'));
}

main().catch((error) => {
  process.stderr.write(`localnet-env: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
