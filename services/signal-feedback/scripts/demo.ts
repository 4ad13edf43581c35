// signal-feedback demo: against a running service, a product owner signs up, creates a product and
// three contexts, the product sends a realistic burst of signals through /api/signals (batches) and
// /api/ingest (automation-style single events with the aliases), the analysis runs, and the proposals
// are printed; then the checkout proposal is approved and its deployment recorded with the express
// checkout as its control group, both contexts' signals are sent for the after-window and for the same
// minutes a week earlier (client timestamps), the same minutes two weeks earlier are imported as
// history with the operator's `admin import-signals` (the placebo's windows, older than the API accepts;
// only with the service's database URL), and the verification's verdict, effect and checks are printed
// once the after-window has closed. Run alone with `pnpm --filter @repo/signal-feedback exec tsx --conditions=@repo/source scripts/demo.ts`
// (SIGNAL_FEEDBACK_URL, default http://127.0.0.1:3002; SIGNAL_FEEDBACK_DATABASE_URL, none by default).
import { importHistory } from './demo-history';
import { pct, printVerification } from './demo-print';

/** Options of {@link runSignalFeedbackDemo}. */
export interface SignalFeedbackDemoOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3002`. */
  baseUrl: string;
  /** Where to print each line of the demo. */
  log: (line: string) => void;
  /** How often the verification is polled while its after-window is open, ms (default 10 000). */
  pollMs?: number;
  /**
   * The deployment's after-window (`window_minutes`), whole minutes, at least 1 (default 2): the demo
   * waits for it to close before it prints the verdict.
   */
  windowMinutes?: number;
  /**
   * The service's database (`DATABASE_URL`): the placebo's history, two weeks back, is imported there
   * (README, "Importing history"). Without it the placebo is not computed, and the demo says why.
   */
  databaseUrl?: string;
}

/** An effect of a verification (README, "Deployments and verification"). */
export interface DemoEffect {
  estimate: number;
  ci_low: number;
  ci_high: number;
  odds_ratio: number;
  odds_ratio_ci_low: number;
  odds_ratio_ci_high: number;
  p_value: number | null;
}

/** A deployment's verification as GET /api/proposals/{id}/deployments returns it (README, "Deployments and verification"). */
export interface DemoVerification {
  verdict: 'improved' | 'regressed' | 'inconclusive';
  reason: string;
  provisional: boolean;
  label: string;
  effect: DemoEffect | null;
  method: {
    estimator: 'did' | 'before_after';
    control_selection: string;
    control_contexts: { context_id: string; before_signals: number; after_signals: number }[];
    windows: { before: { from: string; to: string }; after: { from: string; to: string } };
  };
  control: {
    before: { signals: number; negative: number; negative_rate: number | null };
    after: { signals: number; negative: number; negative_rate: number | null };
  } | null;
  placebo: (DemoEffect & { significant: boolean }) | null;
  traffic: {
    chi_square: number;
    p_value: number;
    expected_treated_after: number;
    observed_treated_after: number;
    significant: boolean;
  } | null;
  monitor: { always_valid_p_value: number; regression_detected: boolean } | null;
  per_type: { signal_type: string | null; effect: DemoEffect | null; adjusted_p_value: number | null }[];
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
  /** Signals imported as history (the placebo's windows); 0 without a database URL. */
  signalsImported: number;
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

/** The express checkout: the same payment step, which the checkout's change does not touch (the control). */
const EXPRESS_CHECKOUT: DemoContext = {
  name: 'Express checkout',
  content: 'One-click purchase with a saved card, from the product page.',
  positive_signals: ['checkout_completed'],
  negative_signals: ['payment_failed', 'checkout_abandoned'],
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
  const express = await createContext(EXPRESS_CHECKOUT);
  log(
    `created contexts Checkout ${checkout.id}, Onboarding ${onboarding.id} and Express checkout ${express.id}`,
  );

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

  const deployment = await deployAndVerify(s, product.api_key, checkout.id, express.id, proposals, {
    checkoutSignals,
    log,
    pollMs: options.pollMs ?? 10_000,
    windowMinutes: options.windowMinutes ?? DEMO_WINDOW_MINUTES,
    databaseUrl: options.databaseUrl,
    productId: product.id,
  });
  sent += deployment.sent;
  log('');
  log(`open ${base}/ to see the checkout chart with the deployment marked on it`);
  return {
    email,
    productId: product.id,
    signalsSent: sent,
    signalsImported: deployment.imported,
    proposals,
    deployment: {
      id: deployment.id,
      proposalId: deployment.proposalId,
      verification: deployment.verification,
    },
  };
}

/** A signal as POST /api/signals takes it. */
interface DemoSignal {
  type: string;
  context_id: string;
  payload?: Record<string, unknown>;
  timestamp?: string;
}

/** The after-window of the demo's deployment by default, minutes: short, so the demo waits two minutes. */
const DEMO_WINDOW_MINUTES = 2;
const WEEK_MS = 7 * 24 * 3_600_000;

/**
 * `signals` stamped evenly over `[from + 10 s, from + window − 10 s)` (`windowMinutes` long): inside
 * the window whatever the few seconds the requests take, and (a week back) within the 7 days a
 * timestamp may be old.
 */
function stamped(signals: readonly DemoSignal[], from: number, windowMinutes: number): DemoSignal[] {
  const span = windowMinutes * 60_000 - 20_000;
  return signals.map((x, i) => ({
    ...x,
    timestamp: new Date(from + 10_000 + Math.floor((i * span) / signals.length)).toISOString(),
  }));
}

/**
 * Approves the checkout proposal and records its deployment now, with an `o.windowMinutes` window and the
 * express checkout as its control group; sends both contexts' signals for the after-window and for
 * the same minutes a week earlier (the before-window, client timestamps): the checkout's burst
 * before and rare declines after, the express checkout unchanged; then polls the verification until
 * the after-window has closed and prints its verdict, effect and checks.
 */
async function deployAndVerify(
  s: Session,
  apiKey: string,
  checkoutId: string,
  expressId: string,
  proposals: DemoProposal[],
  o: {
    checkoutSignals: readonly DemoSignal[];
    log: (line: string) => void;
    pollMs: number;
    windowMinutes: number;
    databaseUrl: string | undefined;
    productId: string;
  },
): Promise<{
  id: string;
  proposalId: string;
  sent: number;
  imported: number;
  verification: DemoVerification;
}> {
  const proposal = proposals.find((p) => p.context_id === checkoutId);
  if (!proposal) throw new Error('the analysis made no checkout proposal');
  await s.call('PATCH', `/api/proposals/${proposal.id}`, { status: 'approved' }, { 'x-api-key': apiKey });
  o.log('');
  o.log(`approved the checkout proposal ${proposal.id}`);
  const deployment = await s.call<{
    id: string;
    deployed_at: string;
    signal_type: string | null;
    contexts: string[];
    control_contexts: string[] | null;
  }>(
    'POST',
    `/api/proposals/${proposal.id}/deployments`,
    {
      version: 'v2.5.0',
      note: 'Retry with another card after a decline',
      window_minutes: o.windowMinutes,
      control_contexts: [expressId],
    },
    { 'x-api-key': apiKey },
  );
  const at = Date.parse(deployment.deployed_at);
  o.log(
    `recorded deployment v2.5.0 ${deployment.id}: the failing signals of the checkout ` +
      `(treated) against the express checkout (control), in the ${o.windowMinutes === 1 ? 'minute' : `${o.windowMinutes} minutes`} after ` +
      `${deployment.deployed_at} and the same minutes a week earlier`,
  );
  const express = (n: number, failing: number): DemoSignal[] =>
    Array.from({ length: n }, (_, i) =>
      i % Math.round(n / failing) === 0
        ? {
            type: 'payment_failed',
            context_id: expressId,
            payload: { step: 'payment', error_code: 'card_declined' },
          }
        : { type: 'checkout_completed', context_id: expressId, payload: { step: 'confirm' } },
    );
  // After the fix: declines are rare in the checkout; the express checkout, untouched, stays as it was.
  const fixed: DemoSignal[] = Array.from({ length: 60 }, (_, i) =>
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
  const weekEarlier = [
    ...stamped(o.checkoutSignals, at - WEEK_MS, o.windowMinutes),
    ...stamped(express(40, 10), at - WEEK_MS, o.windowMinutes),
  ];
  const afterwards = [
    ...stamped(fixed, at, o.windowMinutes),
    ...stamped(express(40, 10), at, o.windowMinutes),
  ];
  let sent = 0;
  for (const [what, batch] of [
    ['the same minutes a week earlier', weekEarlier],
    ['the after-window', afterwards],
  ] as const) {
    const r = await s.call<{ received: number }>('POST', '/api/signals', batch, { 'x-api-key': apiKey });
    sent += r.received;
    const declines = (ctx: string) =>
      batch.filter((x) => x.context_id === ctx && x.type === 'payment_failed').length;
    o.log(
      `POST /api/signals: ${r.received} signals with timestamps in ${what} ` +
        `(checkout ${declines(checkoutId)} payment_failed, express ${declines(expressId)})`,
    );
  }

  // Two weeks back, the placebo's before-window: like a week earlier (no pre-trend), as imported history.
  const twoWeeksEarlier = [
    ...stamped(o.checkoutSignals.slice(0, 57), at - 2 * WEEK_MS, o.windowMinutes),
    ...stamped(express(40, 10), at - 2 * WEEK_MS, o.windowMinutes),
  ];
  const imported = await importHistory(o.databaseUrl, o.productId, twoWeeksEarlier, o.log);

  const closesAt = at + o.windowMinutes * 60_000;
  for (;;) {
    const [current] = await s.call<{ id: string; verification: DemoVerification & { alpha: number } }[]>(
      'GET',
      `/api/proposals/${proposal.id}/deployments`,
      undefined,
      { 'x-api-key': apiKey },
    );
    if (!current) throw new Error('the deployment is not listed');
    const v = current.verification;
    if (!v.provisional) {
      printVerification(v, o.log);
      return { id: current.id, proposalId: proposal.id, sent, imported, verification: v };
    }
    // The first request after the window closes stores the verdict; a minute past it, something is wrong.
    if (Date.now() > closesAt + 60_000) throw new Error(`deployment ${current.id} has no final verdict yet`);
    const left = Math.max(0, Math.ceil((closesAt - Date.now()) / 1000));
    o.log(
      `  provisional, not final (${left} s until the after-window closes): ${pct(v.before.negative_rate)} -> ` +
        `${pct(v.after.negative_rate)} so far; always-valid monitor p = ${v.monitor?.always_valid_p_value ?? 'n/a'}` +
        `${v.monitor?.regression_detected ? ', REGRESSION DETECTED' : ''}`,
    );
    await new Promise((done) =>
      setTimeout(done, Math.min(o.pollMs, Math.max(250, closesAt - Date.now() + 250))),
    );
  }
}

if (require.main === module) {
  runSignalFeedbackDemo({
    baseUrl: process.env.SIGNAL_FEEDBACK_URL ?? 'http://127.0.0.1:3002',
    databaseUrl: process.env.SIGNAL_FEEDBACK_DATABASE_URL,
    log: (l) => process.stdout.write(l + '\n'),
  }).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
