import { apiLinks, type LlmsTxt } from '@repo/service-kit';
import { PLAN_LIMITS, PLANS } from '../../domain/plans';

const count = (n: number | null) => (n === null ? 'unlimited' : n.toLocaleString('en-US'));

/** The plan table of README "Plans and quotas", written from {@link PLAN_LIMITS} so it cannot drift. */
function planLines(): string {
  return PLANS.map((plan) => {
    const l = PLAN_LIMITS[plan];
    return (
      `- ${plan}${l.priceUsd > 0 ? ` ($${l.priceUsd}/month)` : ' (default)'}: ${count(l.signalsPerMonth)} ` +
      `signals, ${count(l.proposalsPerMonth)} proposals and ${count(l.deploymentsPerMonth)} deployments per month, ${count(l.products)} ` +
      (l.products === 1 ? 'product' : 'products')
    );
  }).join('\n');
}

/**
 * signal-feedback's `/llms.txt` (README, "MCP" and "Plans and quotas"): what it does, the plans and
 * quotas, how to get and send a product key, the error envelope, and where the OpenAPI document, the
 * reference page, the MCP endpoint and the dashboard are.
 * @param options.maxBatch MAX_BATCH_SIZE, the most signals in one request
 * @returns the document `llmsTxtRoutes` renders
 */
export function signalFeedbackLlmsTxt(options: { maxBatch: number }): LlmsTxt {
  return {
    title: 'signal-feedback',
    summary:
      "Product-signal feedback: a product sends its users' signals (typed events with a JSON payload); the " +
      'service routes them to contexts (product areas), classes them positive, negative or neutral, and turns ' +
      'them into improvement proposals ranked by priority.',
    details: [
      'Plans: quotas per user (across their products) and calendar month in UTC; using the API, HTTP or MCP, ' +
        'is free within them.',
      planLines(),
      'A batch that would cross the signal quota stores nothing and is refused with 429 `quota_exceeded`, ' +
        'whose message says what to do: split the batch into at most `details.remaining` signals, wait for ' +
        '`details.resets_at`, or upgrade to `details.upgrade_to` (`details { plan, limit, used, remaining, ' +
        'requested, resets_at, upgrade_to }`; `Retry-After` to the month reset only when the plan can take ' +
        'the batch at all).',
      'Product key: sign up in the dashboard at `/` (or `POST /api/auth/signup` with `{"email", "password"}`, ' +
        'which sets a session cookie and returns a `csrf_token`), then create a product there (or ' +
        '`POST /api/products` with `{"name"}` and the `x-csrf-token` header): the answer shows its `spk_` key ' +
        'once. Send the key as the `x-api-key` header, over HTTP and over MCP (`Authorization: Bearer <key>` ' +
        'works too).',
      `Typical use: \`POST /api/signals\` with one signal \`{"type": "payment_failed", "payload": {"error_code": ` +
        `"card_declined"}}\` (optionally with a \`context_id\`, the client's ISO 8601 \`timestamp\` up to 7 ` +
        `days old, and a \`messageId\` that makes retries safe: one seen in the last 24 hours is not stored ` +
        `or counted again) or an array of up to ` +
        `${options.maxBatch.toLocaleString('en-US')} (all or nothing), answered \`{"received": n}\` ` +
        `(plus \`"duplicates"\` when messageIds repeated); later ` +
        '`GET /api/proposals?status=pending` lists the proposals, highest priority first. Contexts (which ' +
        'signal types mean success or failure) are managed with a session (`/api/context`).',
      "Closing the loop: once an approved proposal's change ships, `POST /api/proposals/{id}/deployments` " +
        '(`{"version", "note", "deployed_at"?}`) records it; `GET /api/proposals/{id}/deployments` gives its ' +
        "verification: the failing type's share of the context's signals before and after, a two-proportion " +
        'z-test and a verdict (`improved`, `regressed`, `inconclusive`), provisional until the after-window ' +
        '(24 h by default) closes. A regression raises a new proposal. `GET /api/context/{id}/series` gives ' +
        'signals and negative rate per hour or day.',
      'Errors are `{ "error", "code", "details"?, "requestId" }` with a 4xx status: `unauthorized` (key ' +
        'missing or invalid), `invalid_request` (`details.issues: [{ path, code, message }]`), `payload_too_large`, ' +
        '`quota_exceeded`, `not_found`. Over MCP the same envelope is the JSON text of a tool error.',
    ],
    sections: [
      {
        name: 'API',
        links: apiLinks(
          'tools send_signals (store a batch, returns { received, duplicates? }), ' +
            "list_proposals (the key's proposals), record_deployment and list_deployments (a shipped " +
            'change and its verdict); product key in the x-api-key header',
        ),
      },
      {
        name: 'Optional',
        links: [
          {
            title: 'Dashboard',
            url: '/',
            notes: 'sign up, products and keys, contexts, charts, proposals and their deployments',
          },
        ],
      },
    ],
  };
}
