// The peer of the market-intel benchmarks: the reference x402 v1 middleware `x402-express` 1.2,
// guarding one route as its README's quick start shows (an EVM payee on base-sepolia: the 402 needs
// no facilitator round trip, so its challenge path is the middleware's own work), on the same Express
// as the bare server.
import express from 'express';
import { paymentMiddleware } from 'x402-express';

const app = express();
app.use(
  paymentMiddleware('0x209693Bc6afc0C5328bA36FaF03C514EF312287C', {
    '/protected-route': {
      price: '$0.10',
      network: 'base-sepolia',
      config: { description: 'Market gaps: trends crossed with pain signals' },
    },
  }),
);
app.get('/protected-route', (_req, res) => {
  res.json({ message: 'This content is behind a paywall' });
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
