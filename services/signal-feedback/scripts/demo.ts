// signal-feedback demo: against a running service, a product owner signs up, creates a product and two
// contexts, the product sends a realistic burst of signals through /api/signals (batches) and
// /api/ingest (automation-style single events with the aliases), the analysis runs, and the proposals
// are printed; then the checkout proposal is approved, its deployment recorded, the after-window's
// signals sent, and the verification's verdict printed once that window has closed. Run alone with `pnpm --filter @repo/signal-feedback exec tsx scripts/demo.ts`
// (SIGNAL_FEEDBACK_URL, default http://127.0.0.1:3002).

/** Options of {@link runSignalFeedbackDemo}. */
export interface SignalFeedbackDemoOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3002`. */
  baseUrl: string;
  /** Where to print each line of the demo. */
  log: (line: string) => void;
  /** How often the verification is polled while its after-window is open, ms (default 10 000). */
  pollMs?: number;
}

/** A deployment's verification as GET /api/proposals/{id}/deployments returns it (README, "Deployments and verification"). */
export interface DemoVerification {
  verdict: 'improved' | 'regressed' | 'inconclusive';
  reason: string;
  provisional: boolean;
  before: { signals: number; negative: number; negative_rate: number | null };
  after: { signals: number; negative: number; negative_rate: number | null };
  z: number | null;
  p_value: number | null;
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
  /** The deployment of the approved checkout proposal and its final verification. */
  deployment: { id: string; proposalId: string; verification: DemoVerification };
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

/** A context of the demo product, as POST /api/context takes it (without the product). */
interface DemoContext {
  name: string;
  content: string;
  positive_signals: string[];
  negative_signals: string[];
}

/** The checkout: the signals below make card declines its dominant failure. */
const CHECKOUT: DemoContext = {
  name: 'Checkout',
  content: 'From cart to order confirmation: address, shipping, card payment.',
  positive_signals: ['checkout_completed'],
  negative_signals: ['payment_failed', 'checkout_abandoned'],
};

/** The onboarding: the signals below make failed e-mail verifications its failures. */
const ONBOARDING: DemoContext = {
  name: 'Onboarding',
  content: 'Sign-up, e-mail verification and the first project.',
  positive_signals: ['onboarding_completed'],
  negative_signals: ['verification_failed', 'onboarding_skipped'],
};

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
  const createContext = (context: DemoContext) =>
    s.call<{ id: string }>('POST', '/api/context', { product_id: product.id, ...context });
  const checkout = await createContext(CHECKOUT);
  const onboarding = await createContext(ONBOARDING);
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
  const checkoutSentAt = Date.now();
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

  const deployment = await deployAndVerify(s, product.api_key, checkout.id, proposals, {
    checkoutSentAt,
    log,
    pollMs: options.pollMs ?? 10_000,
  });
  sent += deployment.sent;
  log('');
  log(`open ${base}/ to see the checkout chart with the deployment marked on it`);
  return {
    email,
    productId: product.id,
    signalsSent: sent,
    proposals,
    deployment: {
      id: deployment.id,
      proposalId: deployment.proposalId,
      verification: deployment.verification,
    },
  };
}

const pct = (rate: number | null) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

/**
 * Approves the checkout proposal, records its deployment with windows as long as the time since the
 * checkout signals were sent (at least a minute, so they fall in the before-window), sends the fixed
 * checkout's signals and polls the verification until the after-window has closed.
 */
async function deployAndVerify(
  s: Session,
  apiKey: string,
  checkoutId: string,
  proposals: DemoProposal[],
  o: { checkoutSentAt: number; log: (line: string) => void; pollMs: number },
): Promise<{ id: string; proposalId: string; sent: number; verification: DemoVerification }> {
  const proposal = proposals.find((p) => p.context_id === checkoutId);
  if (!proposal) throw new Error('the analysis made no checkout proposal');
  await s.call('PATCH', `/api/proposals/${proposal.id}`, { status: 'approved' }, { 'x-api-key': apiKey });
  o.log('');
  o.log(`approved the checkout proposal ${proposal.id}`);
  const windowMinutes = Math.max(1, Math.ceil((Date.now() - o.checkoutSentAt + 5_000) / 60_000));
  const deployment = await s.call<{ id: string; deployed_at: string; signal_type: string | null }>(
    'POST',
    `/api/proposals/${proposal.id}/deployments`,
    { version: 'v2.5.0', note: 'Retry with another card after a decline', window_minutes: windowMinutes },
    { 'x-api-key': apiKey },
  );
  o.log(
    `recorded deployment v2.5.0 ${deployment.id}: ${deployment.signal_type ?? 'negative'} signals are compared over the ` +
      `${windowMinutes} minute(s) before and after ${deployment.deployed_at}`,
  );
  // After the fix: declines are rare.
  const after = Array.from({ length: 60 }, (_, i) =>
    i % 15 === 7
      ? {
          type: 'payment_failed',
          context_id: checkoutId,
          payload: { step: 'payment', error_code: 'card_declined' },
        }
      : {
          type: 'checkout_completed',
          context_id: checkoutId,
          payload: { step: 'confirm', provider: 'stripe' },
        },
  );
  const r = await s.call<{ received: number }>('POST', '/api/signals', after, { 'x-api-key': apiKey });
  o.log(
    `POST /api/signals: ${r.received} signals after the deployment (${after.filter((x) => x.type === 'payment_failed').length} payment_failed)`,
  );

  const closesAt = Date.parse(deployment.deployed_at) + windowMinutes * 60_000;
  for (;;) {
    const [current] = await s.call<{ id: string; verification: DemoVerification }[]>(
      'GET',
      `/api/proposals/${proposal.id}/deployments`,
      undefined,
      { 'x-api-key': apiKey },
    );
    if (!current) throw new Error('the deployment is not listed');
    const v = current.verification;
    const figures =
      `${pct(v.before.negative_rate)} of ${v.before.signals} before -> ${pct(v.after.negative_rate)} of ${v.after.signals} after` +
      (v.z === null ? '' : `, z = ${v.z}, p = ${v.p_value}`);
    if (!v.provisional) {
      o.log(`verification: ${v.verdict.toUpperCase()} (${v.reason.replace(/_/g, ' ')}): ${figures}`);
      return { id: current.id, proposalId: proposal.id, sent: r.received, verification: v };
    }
    // The first request after the window closes stores the verdict; a minute past it, something is wrong.
    if (Date.now() > closesAt + 60_000) throw new Error(`deployment ${current.id} has no final verdict yet`);
    const left = Math.max(0, Math.ceil((closesAt - Date.now()) / 1000));
    o.log(`  provisional (${left} s until the after-window closes): ${v.verdict}, ${figures}`);
    await new Promise((done) =>
      setTimeout(done, Math.min(o.pollMs, Math.max(250, closesAt - Date.now() + 250))),
    );
  }
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
