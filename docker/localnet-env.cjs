// Compose only: starts market-intel against the local ledger. The ledger creates its test USDC mint and
// merchant token account on first start, so their addresses are not known in advance: this asks the
// ledger (`localnet_info`, on each network's RPC path) and sets USDC_MINT, MERCHANT_TOKEN_ACCOUNT and the
// devnet pair when they are unset, then runs the compiled service. Production sets them explicitly.
'use strict';

const networks = [
  ['SOLANA_RPC_URL', 'USDC_MINT', 'MERCHANT_TOKEN_ACCOUNT'],
  ['SOLANA_DEVNET_RPC_URL', 'USDC_MINT_DEVNET', 'MERCHANT_TOKEN_ACCOUNT_DEVNET'],
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
  for (const [urlVar, mintVar, accountVar] of networks) {
    const rpcUrl = process.env[urlVar];
    if (!rpcUrl || (process.env[mintVar] && process.env[accountVar])) continue;
    const info = await localnetInfo(rpcUrl);
    process.env[mintVar] = info.mint;
    process.env[accountVar] = info.merchantTokenAccount;
    process.stderr.write(
      `localnet-env: ${mintVar}=${info.mint} ${accountVar}=${info.merchantTokenAccount}\n`,
    );
  }
  require(require('node:path').resolve('dist/main.js'));
}

main().catch((error) => {
  process.stderr.write(`localnet-env: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
