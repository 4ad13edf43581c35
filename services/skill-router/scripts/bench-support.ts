import type { Pool } from 'pg';
import { ApiKeyRepository } from '../src/data/api-keys';
import { openDatabase } from '../src/data/prisma';
import { SkillDirectory } from '../src/data/skill-directory';
import { skillRouterKeys } from '../src/domain/api-keys';
import { definitionHash } from '../src/domain/definition';
import type { RegisterSkillRequest } from '../src/schemas';

export { startLocalSkills } from './local-skills';
export { startScriptedEmbeddings } from './scripted-embeddings';
export type { ScriptedEmbeddings } from './scripted-embeddings';
export type { LocalSkills, SkillBehaviour } from './local-skills';
export type { RegisterSkillRequest } from '../src/schemas';

/** A direct writer into a skill-router database, for benchmarks that need thousands of skills fast. */
export interface DirectorySeeder {
  /** The `pg` pool of the seeded database, for the benchmark's own SQL. */
  pool: Pool;
  /**
   * Stores one skill as a registration would (same row, same full-text vectors), owned by the
   * seeder's key, in `pending_verification`.
   */
  upsert(skill: RegisterSkillRequest): Promise<void>;
  close(): Promise<void>;
}

/**
 * Empties a migrated skill-router database (skills, stats, reports, health checks, keys, rate-limit
 * counters) and opens a seeder over it, with one API key owning what it seeds.
 * @param databaseUrl a migrated skill-router database
 * @param poolSize connections of the seeder's pool
 * @throws whatever PostgreSQL throws
 */
export async function openDirectorySeeder(databaseUrl: string, poolSize = 20): Promise<DirectorySeeder> {
  const database = openDatabase(databaseUrl, poolSize);
  await database.pool.query(
    'TRUNCATE call_reports, health_checks, skill_stats, skill_versions, skills, api_keys, rate_limits',
  );
  const { hash, displayPrefix } = skillRouterKeys.generate();
  const owner = await new ApiKeyRepository(database.prisma).create({
    name: 'bench-seed',
    prefix: displayPrefix,
    keyHash: hash,
  });
  const directory = new SkillDirectory(database.prisma);
  return {
    pool: database.pool,
    async upsert(skill) {
      await directory.upsert(skill, owner.id, definitionHash(skill));
    },
    close: () => database.close(),
  };
}

export { RoutingIndex } from '../src/domain/routing-index';
export type { RoutableSkill } from '../src/data/routing-rows';
