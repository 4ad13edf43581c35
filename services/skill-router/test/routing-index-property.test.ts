import fc from 'fast-check';
import { RoutingRows, type RoutableSkill } from '../src/data/routing-rows';
import { RoutingIndex } from '../src/domain/routing-index';
import { definitionHash } from '../src/domain/definition';
import { nearestRejected } from '../src/domain/route-receipts';
import { rankSkills } from '../src/domain/scoring';
import type { RegisterSkillRequest } from '../src/schemas';
import { buildSkill } from './support/factories';
import { startHarness, type Harness } from './support/harness';

// The routing index against the reference: the SQL ranking (PostgreSQL full-text candidates, every
// one of them, scored by rankSkills). Random directories and tasks, stored and stemmed by the real
// PostgreSQL; the index must return the same matches, scores, reasons, order and total.
let h: Harness;
let ownerKeyId: string;

beforeAll(async () => {
  h = await startHarness('skill_router_routing_property_test');
  await h.createKey('owner');
  const [row] = await h.sql<{ id: string }>(`SELECT id FROM api_keys WHERE name = 'owner'`);
  ownerKeyId = row!.id;
});
afterAll(() => h.close());

// Words that stem together (chart, charts, charting), stop words, hyphenated compounds, numbers,
// addresses, tsquery syntax, other scripts and case: what makes stemming and tokenising disagree.
const WORDS = [
  'chart',
  'charts',
  'charting',
  'swap',
  'swaps',
  'bridge',
  'translate',
  'translation',
  'solana',
  'token',
  'tokens',
  'price',
  'the',
  'of',
  'and',
  'multi-chain',
  'on-chain',
  'x402',
  '3.5',
  'https://example.com/a-b',
  'ops@example.com',
  'Déjà',
  'straße',
  '東京',
  'Run',
  'RUNNING',
  "don't",
  '&',
  '|',
  '!',
  ':*',
  '<->',
  '(',
  "'",
];
const CHAINS = ['solana', 'ethereum', 'base', 'polygon'];

const text = (min: number, max: number) =>
  fc.array(fc.constantFrom(...WORDS), { minLength: min, maxLength: max }).map((w) => w.join(' '));

const skillArb = fc.record({
  name: text(1, 3),
  description: text(3, 10),
  capabilities: fc.uniqueArray(fc.constantFrom(...WORDS.slice(0, 12)), { minLength: 1, maxLength: 3 }),
  chains: fc.uniqueArray(fc.constantFrom(...CHAINS), { maxLength: 3 }),
  price: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 500 }).map((n) => n / 10_000),
  ),
  // `unverified_version`: pending its update's verification after an earlier revision passed.
  status: fc.constantFrom(
    'active',
    'active',
    'active',
    'suspended',
    'degraded',
    'pending_verification',
    'unverified_version',
    'verification_failed',
  ),
  successRate: fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000),
  latency: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: null }),
  calls: fc.integer({ min: 0, max: 20_000 }),
  ratings: fc.integer({ min: 0, max: 40 }),
  stars: fc.integer({ min: 1, max: 5 }),
});

const queryArb = fc.record({
  task: text(1, 6).filter((t) => t.trim().length > 0),
  chains: fc.option(fc.uniqueArray(fc.constantFrom(...CHAINS), { minLength: 1, maxLength: 2 }), {
    nil: undefined,
  }),
  maxPriceUsd: fc.option(
    fc.integer({ min: 1, max: 300 }).map((n) => n / 10_000),
    { nil: undefined },
  ),
  maxLatencyMs: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }),
  limit: fc.integer({ min: 1, max: 25 }),
});

describe('The routing index against the SQL ranking', () => {
  it('When random directories are routed with random tasks, then the index returns the same matches, scores, reasons, order and total as the SQL ranking', async () => {
    const rows = new RoutingRows(h.service.db.pool);
    let runs = 0;
    let nonEmpty = 0;
    let withRejected = 0;
    const reasonsSeen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(skillArb, { minLength: 1, maxLength: 25 }),
        fc.array(queryArb, { minLength: 1, maxLength: 6 }),
        async (skills, queries) => {
          runs++;
          await h.sql('TRUNCATE call_reports, health_checks, skill_stats, skill_versions, skills');
          for (const [i, s] of skills.entries()) {
            const body: RegisterSkillRequest = buildSkill({
              skill_id: `p-${String(i).padStart(2, '0')}`,
              name: s.name.trim() || 'skill',
              description: `${s.description} tool`,
              capabilities: s.capabilities,
              chains: s.chains,
              pricing: { model: 'per_call', price_usd: s.price },
            });
            // The registration's own statement: the same vectors and lexemes as the API stores.
            expect(
              (await h.service.directory.upsert(body, ownerKeyId, definitionHash(body))).outcome,
            ).not.toBe('forbidden');
            const updated = s.status === 'unverified_version';
            if (updated)
              await h.sql(`UPDATE skill_versions SET status = 'passed' WHERE skill_id = $1`, body.skill_id);
            await h.sql(
              `UPDATE skills SET status = $2 WHERE skill_id = $1`,
              body.skill_id,
              updated ? 'pending_verification' : s.status,
            );
            await h.sql(
              `UPDATE skill_stats SET success_rate_24h = $2, avg_latency_ms = $3, calls_30d = $4,
                 rating_count = $5, rating_sum = $6 WHERE skill_id = $1`,
              body.skill_id,
              s.successRate,
              s.latency,
              s.calls,
              s.ratings,
              s.ratings * s.stars,
            );
          }
          await h.reloadRouting();
          for (const q of queries) {
            const reference = await h.service.candidates.find(q.task, q.chains, 100_000);
            const expected = rankSkills(
              reference.candidates,
              {
                taskTerms: reference.taskTerms,
                chains: q.chains,
                maxPriceUsd: q.maxPriceUsd,
                maxLatencyMs: q.maxLatencyMs,
              },
              q.limit,
            );
            const taskTerms = await rows.taskTerms(q.task);
            // The SQL answer carries the task's lexemes on its rows, so only when it has rows.
            if (reference.candidates.length > 0) expect(taskTerms).toEqual(reference.taskTerms);
            const actual = h.service.routing.route(
              { taskTerms, chains: q.chains, maxPriceUsd: q.maxPriceUsd, maxLatencyMs: q.maxLatencyMs },
              q.limit,
            );
            const view = (m: (typeof expected)[number]) => ({
              id: m.skill.skillId,
              score: m.score,
              reasons: m.reasons,
              factors: m.factors,
              terms: [...m.skill.matchTerms].sort(),
            });
            expect(actual.total).toBe(reference.total);
            expect(actual.matches.map(view)).toEqual(expected.map(view));
            if (expected.length > 0) nonEmpty++;
            // Receipts: the same nearest skills the route removed, with the same reasons.
            const removed = await h.service.candidates.rejected(q.task, q.chains, 10);
            const expectedRejected =
              removed.taskTermCount > 0
                ? nearestRejected(
                    removed.skills,
                    { taskTerms, chains: q.chains, maxPriceUsd: q.maxPriceUsd, maxLatencyMs: q.maxLatencyMs },
                    removed.taskTermCount,
                  )
                : [];
            expect(actual.rejected).toEqual(expectedRejected);
            if (expectedRejected.length > 0) withRejected++;
            for (const r of expectedRejected) for (const reason of r.reasons) reasonsSeen.add(reason);
          }
        },
      ),
      { numRuns: 30 },
    );
    // The property was exercised on real matches, not only on empty answers.
    expect(runs).toBeGreaterThanOrEqual(30);
    expect(nonEmpty).toBeGreaterThan(10);
    expect(withRejected).toBeGreaterThan(5);
    expect([...reasonsSeen].sort()).toEqual(
      ['chain', 'degraded', 'over_max_latency', 'over_max_price', 'unhealthy', 'unverified_version'].sort(),
    );
  }, 180_000);
});

describe('The routing index under updates', () => {
  // With lexemes of other scripts, an astral character and a lone surrogate: the index keeps every
  // key as UTF-16 code units.
  const LEXEMES = [
    'chart',
    'swap',
    'bridg',
    'translat',
    'token',
    'price',
    'solana',
    'agent',
    'café',
    '東京',
    '😀',
    '\ud83d',
  ];
  const routable = (id: number) =>
    fc
      .record({
        name: fc.uniqueArray(fc.constantFrom(...LEXEMES), { maxLength: 2 }),
        matchTerms: fc.uniqueArray(fc.constantFrom(...LEXEMES), { minLength: 1, maxLength: 4 }),
        chains: fc.uniqueArray(fc.constantFrom(...CHAINS), { maxLength: 2 }),
        priceUsd: fc.constantFrom(0, 0.001, 0.01, 0.05),
        successRate24h: fc.constantFrom(0, 0.5, 1),
        avgLatencyMs: fc.constantFrom(null, 50, 900),
        calls30d: fc.constantFrom(0, 10, 5000),
        state: fc.constantFrom(
          'active',
          'active',
          'unhealthy',
          'degraded',
          'unverified_version',
        ) as fc.Arbitrary<RoutableSkill['state']>,
      })
      .map((r): RoutableSkill => ({
        skillId: `s-${id}`,
        state: r.state,
        name: r.name.join(' '),
        endpoint: `https://example.com/${id}`,
        chains: r.chains,
        priceUsd: r.priceUsd,
        routeTerms: [...new Set([...r.name, ...r.matchTerms])],
        matchTerms: r.matchTerms,
        successRate24h: r.successRate24h,
        avgLatencyMs: r.avgLatencyMs,
        calls30d: r.calls30d,
        ratingSum: 0,
        ratingCount: 0,
      }));
  const op = fc.oneof(
    fc
      .integer({ min: 0, max: 15 })
      .chain((id) => routable(id).map((skill) => ({ kind: 'upsert' as const, skill }))),
    fc.integer({ min: 0, max: 15 }).map((id) => ({ kind: 'remove' as const, skillId: `s-${id}` })),
  );

  it('When skills are added, replaced and removed in any order, with routes answered (and remembered) along the way, then every route equals that of an index built from the final directory', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 60 }),
        fc.nat(),
        fc.array(
          fc.record({
            taskTerms: fc.uniqueArray(fc.constantFrom(...LEXEMES), { minLength: 1, maxLength: 4 }),
            chains: fc.option(fc.uniqueArray(fc.constantFrom(...CHAINS), { minLength: 1, maxLength: 2 }), {
              nil: undefined,
            }),
            maxPriceUsd: fc.option(fc.constantFrom(0.005, 0.02), { nil: undefined }),
            limit: fc.integer({ min: 1, max: 20 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        (ops, split, queries) => {
          const updated = new RoutingIndex();
          const directory = new Map<string, RoutableSkill>();
          const warmAt = ops.length === 0 ? 0 : split % ops.length;
          for (const [i, o] of ops.entries()) {
            // Answers ranked now must not outlive the updates that follow.
            if (i === warmAt) for (const { limit, ...query } of queries) updated.route(query, limit);
            if (o.kind === 'upsert') {
              updated.upsert(o.skill);
              directory.set(o.skill.skillId, o.skill);
            } else {
              updated.remove(o.skillId);
              directory.delete(o.skillId);
            }
          }
          const fresh = new RoutingIndex();
          for (const skill of directory.values()) fresh.upsert(skill);
          const active = [...directory.values()].filter((sk) => sk.state === 'active');
          expect(updated.size).toBe(active.length);
          expect(updated.held).toBe(directory.size);
          for (const q of queries) {
            const { limit, ...query } = q;
            // Every match of the fresh index is scored against the directory by rankSkills too.
            const reference = rankSkills(
              active
                .filter((sk) => sk.routeTerms.some((t) => query.taskTerms.includes(t)))
                .map((sk) => ({
                  ...sk,
                  matchTerms: sk.matchTerms.filter((t) => query.taskTerms.includes(t)),
                })),
              query,
              limit,
            );
            const view = (r: {
              matches: { skill: { skillId: string }; score: number; reasons: string[] }[];
            }) => r.matches.map((m) => [m.skill.skillId, m.score, m.reasons]);
            expect(view(updated.route(query, limit))).toEqual(view(fresh.route(query, limit)));
            expect(view(updated.route(query, limit))).toEqual(view({ matches: reference }));
            const wanted = query.chains ?? [];
            const rejectedReference = nearestRejected(
              [...directory.values()]
                .filter(
                  (sk) =>
                    (sk.state !== 'active' ||
                      (wanted.length > 0 && !sk.chains.some((c) => wanted.includes(c)))) &&
                    sk.routeTerms.some((t) => query.taskTerms.includes(t)),
                )
                .map((sk) => ({
                  ...sk,
                  sharedTerms: sk.matchTerms.filter((t) => query.taskTerms.includes(t)).length,
                })),
              query,
              query.taskTerms.length,
            );
            expect(updated.route(query, limit).rejected).toEqual(fresh.route(query, limit).rejected);
            expect(updated.route(query, limit).rejected).toEqual(rejectedReference);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('The routing index at scale, with any text', () => {
  const LEXEMES = Array.from({ length: 40 }, (_, i) => `lex${i}`);
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('lone \ud800 high', 'lone \udc00 low', 'Déjà vu 東京 🦊', ''),
  );
  // Ids a UTF-8 copy would change, and ids beyond ASCII, among plain ones.
  const idOf = (id: number) =>
    id % 50 === 7 ? `odd-\ud800-${id}` : id % 50 === 9 ? `東京-${id}` : `s-${id}`;
  const routable = (id: number) =>
    fc
      .record({
        name: text,
        endpoint: text.map((t) => `https://example.com/${t}`),
        nameOnly: fc.uniqueArray(fc.constantFrom(...LEXEMES), { maxLength: 3 }),
        matchTerms: fc.uniqueArray(fc.constantFrom(...LEXEMES), { minLength: 1, maxLength: 12 }),
        chains: fc.uniqueArray(fc.constantFrom(...CHAINS, 'bitcoin', 'tron'), { maxLength: 3 }),
        priceUsd: fc.constantFrom(0, 0.001, 0.0123, 0.05),
        successRate24h: fc.double({ min: 0, max: 1, noNaN: true }),
        avgLatencyMs: fc.option(fc.double({ min: 0, max: 5000, noNaN: true }), { nil: null }),
        calls30d: fc.nat(20_000),
        ratingCount: fc.nat(40),
      })
      .map((r): RoutableSkill => ({
        skillId: idOf(id),
        state: 'active',
        name: r.name,
        endpoint: r.endpoint,
        chains: r.chains,
        priceUsd: r.priceUsd,
        routeTerms: [...new Set([...r.nameOnly, ...r.matchTerms])],
        matchTerms: r.matchTerms,
        successRate24h: r.successRate24h,
        avgLatencyMs: r.avgLatencyMs,
        calls30d: r.calls30d,
        ratingSum: r.ratingCount * 4,
        ratingCount: r.ratingCount,
      }));
  // More ids than the id table's first size holds, so that it grows.
  const IDS = 1500;
  const op = fc.oneof(
    { weight: 3, arbitrary: fc.nat(IDS - 1).chain((id) => routable(id).map((skill) => ({ skill }))) },
    { weight: 1, arbitrary: fc.nat(IDS - 1).map((id) => ({ skillId: idOf(id) })) },
  );

  it('When hundreds of skills are added, replaced and removed (the packed arrays grow, move, shrink and are trimmed), then every match carries the skill as it was last written, and every route equals the reference', () => {
    fc.assert(
      fc.property(
        fc.array(op, { minLength: 1000, maxLength: 4000 }),
        fc.nat(),
        fc.array(
          fc.record({
            taskTerms: fc.uniqueArray(fc.constantFrom(...LEXEMES), { minLength: 1, maxLength: 4 }),
            chains: fc.option(
              fc.uniqueArray(fc.constantFrom(...CHAINS, 'tron'), { minLength: 1, maxLength: 2 }),
              {
                nil: undefined,
              },
            ),
            maxLatencyMs: fc.option(fc.constantFrom(100, 2000), { nil: undefined }),
            limit: fc.integer({ min: 1, max: 100 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        (ops, split, queries) => {
          // Sized for a full load, or not.
          const index = new RoutingIndex(split % 2 === 0 ? ops.length : 0);
          const directory = new Map<string, RoutableSkill>();
          // As after a full load: trimmed, then updated.
          const trimAt = split % ops.length;
          for (const [i, o] of ops.entries()) {
            if (i === trimAt) index.trim();
            if ('skill' in o) {
              index.upsert(o.skill);
              directory.set(o.skill.skillId, o.skill);
            } else {
              index.remove(o.skillId);
              directory.delete(o.skillId);
            }
          }
          expect(index.size).toBe(directory.size);
          for (let id = 0; id < IDS; id++) expect(index.has(idOf(id))).toBe(directory.has(idOf(id)));
          for (const { limit, ...query } of queries) {
            const matching = [...directory.values()].filter((sk) =>
              sk.routeTerms.some((t) => query.taskTerms.includes(t)),
            );
            const reference = rankSkills(
              matching.map((sk) => ({
                ...sk,
                matchTerms: sk.matchTerms.filter((t) => query.taskTerms.includes(t)),
              })),
              query,
              limit,
            );
            const actual = index.route(query, limit);
            expect(actual.total).toBe(
              rankSkills(
                matching.map((sk) => ({ ...sk, matchTerms: [] })),
                query,
              ).length,
            );
            expect(actual.matches).toEqual(
              reference.map((m) => {
                // The reference carries every field of the written skill; a match carries a candidate's.
                const { routeTerms: _routeTerms, state: _state, ...candidate } = m.skill;
                return { ...m, skill: candidate };
              }),
            );
            const wanted = query.chains ?? [];
            expect(actual.rejected).toEqual(
              nearestRejected(
                matching
                  .filter((sk) => wanted.length > 0 && !sk.chains.some((c) => wanted.includes(c)))
                  .map((sk) => ({
                    ...sk,
                    sharedTerms: sk.matchTerms.filter((t) => query.taskTerms.includes(t)).length,
                  })),
                query,
                query.taskTerms.length,
              ),
            );
          }
        },
      ),
      { numRuns: 15 },
    );
  });
});
