import type { Pool } from 'pg';
import { notifyRouting } from './routing-rows';

/** A verified revision whose embedding is missing or of another model. */
export interface UnembeddedSkill {
  skillId: string;
  revision: number;
  name: string;
  capabilities: string[];
  description: string;
}

/**
 * The stored embeddings of skills (`skills.embedding`, `embedding_model`, `embedding_revision`;
 * README, "Search by meaning"). Only revisions that passed verification are embedded: active,
 * suspended and degraded skills.
 */
export class SkillEmbeddings {
  constructor(private readonly pool: Pool) {}

  /**
   * Verified skills whose current revision has no embedding of `model` (verified since the last round,
   * verified before embeddings were configured, or embedded by another model), oldest change first.
   * @param limit most returned
   */
  async unembedded(model: string, limit: number): Promise<UnembeddedSkill[]> {
    const { rows } = await this.pool.query<{
      skill_id: string;
      revision: number;
      name: string;
      capabilities: string[] | null;
      description: string;
    }>(
      `SELECT skill_id, revision, name, capabilities, description FROM skills
        WHERE status IN ('active', 'suspended', 'degraded')
          AND (embedding_model IS DISTINCT FROM $1 OR embedding_revision IS DISTINCT FROM revision)
        ORDER BY changed_at, skill_id
        LIMIT $2`,
      [model, limit],
    );
    return rows.map((r) => ({
      skillId: r.skill_id,
      revision: r.revision,
      name: r.name,
      capabilities: r.capabilities ?? [],
      description: r.description,
    }));
  }

  /**
   * Stores a revision's embedding, unless the skill was updated since (another revision): stamps
   * `changed_at` and notifies the routing index, like every write of a column routing reads.
   * @param vector the unit embedding (stored as `real[]`)
   * @returns whether it was stored
   */
  async store(skillId: string, revision: number, model: string, vector: Float32Array): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE skills SET embedding = $4::real[], embedding_model = $3, embedding_revision = $2,
              changed_at = clock_timestamp()
        WHERE skill_id = $1 AND revision = $2
        RETURNING ${notifyRouting('skill_id')}`,
      [skillId, revision, model, Array.from(vector)],
    );
    return (rowCount ?? 0) > 0;
  }
}
