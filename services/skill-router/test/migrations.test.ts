import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { testDatabaseUrl } from '@repo/service-kit/testing';

const DIR = path.join(__dirname, '../prisma/migrations');
const quiet = { info: () => undefined, warn: () => undefined };

describe('migrations', () => {
  it('When a database created by the first migration holds skills, then the later migrations move their metrics into skill_stats', async () => {
    const databaseUrl = testDatabaseUrl('skill_router_migrations_test');
    await resetDatabase(databaseUrl);
    const first = mkdtempSync(path.join(os.tmpdir(), 'sr-mig-'));
    try {
      cpSync(path.join(DIR, 'migration_lock.toml'), path.join(first, 'migration_lock.toml'));
      cpSync(path.join(DIR, '20261122043000_init'), path.join(first, '20261122043000_init'), {
        recursive: true,
      });
      await applyMigrations({ databaseUrl, migrationsDir: first, log: quiet });
      const pg = new Client({ connectionString: databaseUrl });
      await pg.connect();
      try {
        await pg.query(
          `INSERT INTO api_keys (id, name, prefix, key_hash) VALUES ('00000000-0000-0000-0000-000000000001', 'k', 'sk_router_x', 'h')`,
        );
        await pg.query(
          `INSERT INTO skills (skill_id, name, provider, description, capabilities, chains, pricing_model, price_usd, endpoint,
             input_schema, output_schema, owner_key_id, status, success_rate_24h, avg_latency_ms, calls_30d, rating_sum, rating_count,
             popularity, consecutive_failures)
           VALUES ('old', 'Old', 'p', 'an old skill', '{a}', '{solana}', 'per_call', 0.01, 'https://example.com', '{}', '{}',
             '00000000-0000-0000-0000-000000000001', 'active', 0.75, 123, 40, 20, 5, 0.6, 2)`,
        );
        const result = await applyMigrations({ databaseUrl, migrationsDir: DIR, log: quiet });
        expect(result.applied).toEqual([
          '20261122050000_skill_stats_table',
          '20261122050100_skill_stats_backfill',
          '20261122050200_drop_skill_metric_columns',
          '20261123220000_verification_attempts',
          '20261124040000_report_weighting',
          '20261125120000_routing_watermark',
          '20261128193524_definition_pinning',
          '20261128193624_definition_pinning_backfill',
          '20261128194000_report_reputation',
          '20261128194100_routed_days_backfill',
          '20261128194200_reliability_prior',
          '20261128204229_definition_quality',
          '20261128234412_mcp_tools',
          '20261129000003_skill_embeddings',
        ]);
        const { rows } = await pg.query(
          'SELECT skill_id, success_rate_24h, avg_latency_ms, calls_30d, rating_sum, rating_count, popularity, consecutive_failures FROM skill_stats',
        );
        expect(rows).toEqual([
          {
            skill_id: 'old',
            success_rate_24h: 0.75,
            avg_latency_ms: 123,
            calls_30d: 40,
            rating_sum: 20,
            rating_count: 5,
            popularity: 0.6,
            consecutive_failures: 2,
          },
        ]);
        const cols = await pg.query(
          `SELECT column_name FROM information_schema.columns WHERE table_name = 'skills' AND column_name = 'success_rate_24h'`,
        );
        expect(cols.rows).toEqual([]);
        const attempts = await pg.query('SELECT verification_attempts FROM skills');
        expect(attempts.rows).toEqual([{ verification_attempts: 0 }]);
        // Its current revision is its first recorded version, from before definitions were pinned, and
        // its first conformance call is due within ten minutes.
        const versions = await pg.query(
          'SELECT skill_id, revision, definition_hash, status, definition FROM skill_versions',
        );
        expect(versions.rows).toEqual([
          {
            skill_id: 'old',
            revision: 1,
            definition_hash: null,
            status: 'passed',
            definition: {
              endpoint: 'https://example.com',
              description: 'an old skill',
              pricing: { model: 'per_call', price_usd: 0.01 },
              input_schema: {},
              output_schema: {},
            },
          },
        ]);
        const due = await pg.query(
          `SELECT next_conformance_at BETWEEN now() - interval '1 minute' AND now() + interval '10 minutes' AS soon FROM skill_stats`,
        );
        expect(due.rows).toEqual([{ soon: true }]);
      } finally {
        await pg.end();
      }
    } finally {
      rmSync(first, { recursive: true, force: true });
    }
  });
});
