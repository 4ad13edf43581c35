// The baseline of the benchmarks: a bare Express app with no middleware at all. GET /bare answers a
// body of about the size of a 402 challenge (market-intel); POST /bare parses a JSON body as
// express.json() does and answers the same body (skill-router's route requests).
import express from 'express';

const app = express();
const body = {
  x402Version: 1,
  accepts: [
    {
      scheme: 'exact',
      network: 'solana',
      maxAmountRequired: '100000',
      asset: 'So11111111111111111111111111111111111111112',
      payTo: 'So11111111111111111111111111111111111111112',
      resource: 'http://127.0.0.1:3001/api/v1/scout/gaps',
      description: 'Market gaps: trends crossed with pain signals',
      mimeType: 'application/json',
      maxTimeoutSeconds: 60,
    },
  ],
  error: 'X-PAYMENT header is required',
};
app.get('/bare', (_req, res) => {
  res.json(body);
});
app.post('/bare', express.json(), (_req, res) => {
  res.json(body);
});
// For the benchmark's CPU accounting (/proc/<pid>); after /bare, so the measured route is unchanged.
app.get('/pid', (_req, res) => {
  res.type('text/plain').send(String(process.pid));
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
