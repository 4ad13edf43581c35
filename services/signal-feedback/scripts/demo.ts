// signal-feedback demo: against a running service, a product owner signs up, creates a product and two
// contexts, the product sends a realistic burst of signals through /api/signals (batches) and
// /api/ingest (automation-style single events with the aliases), the analysis runs, and the proposals
// are printed. Run alone with `pnpm --filter @repo/signal-feedback exec tsx scripts/demo.ts`
// (SIGNAL_FEEDBACK_URL, default http://127.0.0.1:3002).

/** Options of {@link runSignalFeedbackDemo}. */
export interface SignalFeedbackDemoOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3002`. */
  baseUrl: string;
  /** Where to print each line of the demo. */
  log: (line: string) => void;
}

/** A proposal as GET /api/proposals returns it (README, "Endpoints"). */
export interface DemoProposal {
  id: string;
  context_id: string;
  status: string;
  priority_score: number;
  diagnosis: string;
  proposed_change: string;
  evidence_summary: string;
  predicted_impact: string;
  signal_count: number;
}

/** What the demo created and found. */
export interface SignalFeedbackDemoResult {
  email: string;
  productId: string;
  signalsSent: number;
  proposals: DemoProposal[];
}

class Session {
  private cookie = '';
  csrf = '';
  constructor(private readonly baseUrl: string) {}

  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(this.csrf && method !== 'GET' ? { 'x-csrf-token': this.csrf } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const setCookie = res.headers.getSetCookie().find((c) => /sf_session=/.test(c));
    if (setCookie) this.cookie = setCookie.split(';')[0] ?? '';
    const text = await res.text();
    const data = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) throw new Error(`${method} ${path} -> HTTP ${res.status}: ${text}`);
    return data as T;
  }
}

const pick = <T>(items: readonly T[], i: number): T => items[i % items.length] as T;

/**
 * Runs the demo against a running signal-feedback.
 * @returns the account, product, number of signals sent and the proposals made from them
 * @throws Error when the service is unreachable or any step answers an error
 */
export async function runSignalFeedbackDemo(
  options: SignalFeedbackDemoOptions,
): Promise<SignalFeedbackDemoResult> {
  const base = options.baseUrl.replace(/\/+$/, '');
  const log = options.log;
  await fetch(`${base}/livez`).catch(() => {
    throw new Error(`signal-feedback is not reachable at ${base}: start it first`);
  });
  const s = new Session(base);
  const email = `demo-${Date.now()}@example.com`;
  const me = await s.call<{ csrf_token: string; user: { plan: string } }>('POST', '/api/auth/signup', {
    email,
    password: 'demo password 123',
  });
  s.csrf = me.csrf_token;
  log(`signed up ${email} (plan ${me.user.plan}); session cookie and CSRF token kept`);

  const product = await s.call<{ id: string; name: string; api_key: string }>('POST', '/api/products', {
    name: 'Acme Shop',
  });
  log(
    `created product "${product.name}" ${product.id}; API key ${product.api_key.slice(0, 12)}… (shown once)`,
  );
  const checkout = await s.call<{ id: string }>('POST', '/api/context', {
    product_id: product.id,
    name: 'Checkout',
    content: 'From cart to order confirmation: address, shipping, card payment.',
    positive_signals: ['checkout_completed'],
    negative_signals: ['payment_failed', 'checkout_abandoned'],
  });
  const onboarding = await s.call<{ id: string }>('POST', '/api/context', {
    product_id: product.id,
    name: 'Onboarding',
    content: 'Sign-up, e-mail verification and the first project.',
    positive_signals: ['onboarding_completed'],
    negative_signals: ['verification_failed', 'onboarding_skipped'],
  });
  log(`created contexts Checkout ${checkout.id} and Onboarding ${onboarding.id}`);

  // Checkout: card declines dominate the failures, mostly on the payment step with 3-D Secure.
  const checkoutSignals = Array.from({ length: 60 }, (_, i) => {
    if (i % 3 === 0)
      return {
        type: 'checkout_completed',
        context_id: checkout.id,
        payload: { step: 'confirm', provider: 'stripe', total_cents: 2000 + i * 37 },
      };
    if (i % 5 === 1)
      return { type: 'checkout_abandoned', context_id: checkout.id, payload: { step: 'shipping' } };
    return {
      type: 'payment_failed',
      context_id: checkout.id,
      payload: {
        step: 'payment',
        error_code: pick(['card_declined', 'card_declined', 'card_declined', '3ds_timeout'], i),
        provider: 'stripe',
      },
    };
  });
  let sent = 0;
  for (let i = 0; i < checkoutSignals.length; i += 25) {
    const batch = checkoutSignals.slice(i, i + 25);
    const r = await s.call<{ received: number }>('POST', '/api/signals', batch, {
      'x-api-key': product.api_key,
    });
    sent += r.received;
    log(`POST /api/signals batch of ${batch.length} -> received ${r.received}`);
  }

  // Onboarding events from an automation tool: key in the query, event/data and event_type/properties.
  const onboardingEvents = Array.from({ length: 20 }, (_, i) =>
    i % 4 === 0
      ? {
          event: 'onboarding_completed',
          data: { plan: 'trial', mail_provider: 'gmail' },
          context_id: onboarding.id,
        }
      : {
          event_type: 'verification_failed',
          properties: {
            reason: pick(['link_expired', 'link_expired', 'spam_folder'], i),
            mail_provider: pick(['outlook', 'outlook', 'outlook', 'gmail', 'gmail'], i),
          },
          context_id: onboarding.id,
        },
  );
  for (const event of onboardingEvents) {
    const r = await s.call<{ received: number }>(
      'POST',
      `/api/ingest?key=${encodeURIComponent(product.api_key)}`,
      event,
    );
    sent += r.received;
  }
  log(`POST /api/ingest ×${onboardingEvents.length} (single events, key in ?key=) -> all received`);

  const run = await s.call<{ contexts_analyzed: number; proposals_created: number }>(
    'POST',
    '/api/analysis/run',
  );
  log(`analysis: ${run.contexts_analyzed} context(s) analysed, ${run.proposals_created} proposal(s) created`);

  const proposals = await s.call<DemoProposal[]>('GET', '/api/proposals?status=pending', undefined, {
    'x-api-key': product.api_key,
  });
  for (const p of proposals) {
    log('');
    log(`proposal ${p.id}  priority ${p.priority_score}  (${p.signal_count} signals, ${p.status})`);
    log(`  diagnosis:        ${p.diagnosis}`);
    log(`  evidence:         ${p.evidence_summary}`);
    log(`  proposed change:  ${p.proposed_change}`);
    log(`  predicted impact: ${p.predicted_impact}`);
  }
  return { email, productId: product.id, signalsSent: sent, proposals };
}

if (require.main === module) {
  runSignalFeedbackDemo({
    baseUrl: process.env.SIGNAL_FEEDBACK_URL ?? 'http://127.0.0.1:3002',
    log: (l) => process.stdout.write(l + '\n'),
  }).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
