import { apiLinks, type LlmsTxt } from '@repo/service-kit';

/**
 * skill-router's `/llms.txt` (README, "Endpoints" and "MCP"): what it does, that it is free, how to get and
 * send a key, and where the OpenAPI document, the reference page and the MCP endpoint are.
 */
export const SKILL_ROUTER_LLMS_TXT: LlmsTxt = {
  title: 'skill-router',
  summary:
    'A directory of agent skills: find, rank, register and rate them. Route a natural-language task to the ' +
    'best active skills by a weighted score of capability, chain, price, reliability, latency and popularity.',
  details: [
    'Free. Routing, registering and reporting need an `sk_router_` key: `POST /api/auth/key` with ' +
      '`{"name": "my-agent"}` answers it once (5 per minute per client address). Send it as the `x-api-key` ' +
      'header, over HTTP and over MCP (`Authorization: Bearer <key>` works too). Listing and reading ' +
      'skills need no key.',
    'Typical use: `POST /api/discover/route` with `{"task": "...", "requirements": {"chains": ["solana"], ' +
      '"max_price_usd": 0.01}}`, call the best match at its `endpoint`, then `POST /api/discover/report` with ' +
      'the outcome. A registered skill is verified (endpoint health, its JSON Schemas, a test call) before it ' +
      'is routed.',
    'Errors are `{ "error", "code", "details"?, "requestId" }` with a 4xx status (`unauthorized`, ' +
      '`invalid_request`, `not_found`, `forbidden`, `rate_limited` with `Retry-After` seconds).',
  ],
  sections: [
    {
      name: 'API',
      links: apiLinks(
        'tools route_task, list_skills, get_skill, list_skill_versions, register_skill, report_call',
      ),
    },
    {
      name: 'Optional',
      links: [{ title: 'Health', url: '/api/health', notes: 'status and version' }],
    },
  ],
};
