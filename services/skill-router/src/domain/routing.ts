import type { CandidateRecord } from '../data/route-candidates';
import {
  nearestRejected,
  REJECTED_MAX,
  type RejectableSkill,
  type RejectedCandidate,
} from './route-receipts';
import type { IndexRoute } from './routing-index';
import { rankSkills, type RouteQuery, type ScoredSkill } from './scoring';
import type { SemanticQuery, TaskEmbeddings } from './semantic';

/** Where routing gets its candidates from PostgreSQL full text (data/route-candidates.ts). */
export interface CandidateSource {
  find(
    task: string,
    chains: string[] | undefined,
    limit: number,
    semantic?: { vector: Float64Array; minSimilarity: number; embeddingModel: string },
  ): Promise<{ taskTerms: string[]; candidates: CandidateRecord[]; total: number }>;
  /** The snapshot instant and the skills the chain filter removes (data/route-candidates.ts). */
  rejected(
    task: string,
    chains: string[] | undefined,
    max: number,
  ): Promise<{ snapshotAt: Date; taskTermCount: number; skills: RejectableSkill[] }>;
}

/** The in-memory routing index as routing uses it (domain/routing-sync.ts). */
export interface IndexSource {
  /** `true` while the index is loaded and kept current; otherwise routes go to PostgreSQL. */
  readonly current: boolean;
  /**
   * The database's clock at the index's last watermark check or full load: every write committed
   * (and stamped) before it is in the index; `null` before the first load.
   */
  readonly snapshotAt: Date | null;
  route(query: RouteQuery, limit: number): IndexRoute;
}

/** What {@link routeTask} reads. */
export interface RoutingSources {
  index: IndexSource;
  /** The task's distinct lexemes as PostgreSQL's `english` configuration computes them. */
  taskTerms(task: string): Promise<string[]>;
  /** The SQL ranking: the reference, and the fallback while the index is not current. */
  candidates: CandidateSource;
  /**
   * Search by meaning, when an embeddings endpoint is configured (README, "Search by meaning"): the
   * task embeddings and the model whose stored embeddings count.
   */
  semantic?: { tasks: Pick<TaskEmbeddings, 'query'>; model: string };
}

/** A route request as the domain sees it. */
export interface RouteInput {
  task: string;
  chains?: string[];
  maxPriceUsd?: number;
  maxLatencyMs?: number;
  /** How many matches to return. */
  limit: number;
}

/** The ranked matches, how many skills qualified, and which path answered. */
export interface RouteOutcome {
  matches: ScoredSkill<CandidateRecord>[];
  /** Active skills matching the task's terms and the chain filter (before `limit`). */
  totalMatches: number;
  /** `index`: the in-memory routing index; `database`: the SQL ranking. */
  source: 'index' | 'database';
  /** The nearest skills the chain filter removed, at most {@link REJECTED_MAX} (README, "Routing receipts"). */
  rejected: RejectedCandidate[];
  /**
   * When the health and reliability data used were read: the index's {@link IndexSource.snapshotAt},
   * or the database's clock at the start of the SQL ranking's reads.
   */
  snapshotAt: Date;
}

/**
 * Routes a task (README, "Routing and the score"; POST /api/discover/route): from the replica's
 * routing index while it is current, which scores every matching skill; otherwise from PostgreSQL
 * full text (at most `candidateLimit` candidates, best text rank first), each scored with the six
 * weighted factors; with search by meaning, capability_match blends the similarity of the task's
 * embedding (README, "Search by meaning"), and a failed embeddings request ranks by words alone. Both order by score then `skill_id`, and both list the same nearest skills the
 * chain filter removed, with the instant of the data they read (README, "Routing receipts").
 * @throws whatever PostgreSQL throws
 */
export async function routeTask(
  sources: RoutingSources,
  input: RouteInput,
  candidateLimit: number,
): Promise<RouteOutcome> {
  // The task's embedding (one request per distinct task, remembered); undefined: words alone.
  const semanticQuery = sources.semantic ? sources.semantic.tasks.query(input.task) : undefined;
  let semantic: SemanticQuery | undefined;
  const query = (taskTerms: string[]): RouteQuery => ({
    taskTerms,
    chains: input.chains,
    maxPriceUsd: input.maxPriceUsd,
    maxLatencyMs: input.maxLatencyMs,
    ...(semantic ? { semantic } : {}),
  });
  if (sources.index.current) {
    const [taskTerms, found] = await Promise.all([sources.taskTerms(input.task), semanticQuery]);
    semantic = found;
    // Checked again: the index may have stopped being current while the lexemes were computed.
    const snapshotAt = sources.index.snapshotAt;
    if (sources.index.current && snapshotAt) {
      const { matches, total, rejected } = sources.index.route(query(taskTerms), input.limit);
      return { matches, totalMatches: total, source: 'index', rejected, snapshotAt };
    }
  }
  semantic = await semanticQuery;
  // The rejected read first: its clock is then no later than either read's snapshot.
  const removed = await sources.candidates.rejected(input.task, input.chains, REJECTED_MAX);
  const { taskTerms, candidates, total } = await sources.candidates.find(
    input.task,
    input.chains,
    candidateLimit,
    semantic && sources.semantic
      ? {
          vector: semantic.vector,
          minSimilarity: semantic.minSimilarity,
          embeddingModel: sources.semantic.model,
        }
      : undefined,
  );
  const matches = rankSkills(candidates, query(taskTerms), input.limit);
  const rejected =
    removed.taskTermCount > 0
      ? nearestRejected(removed.skills, query(taskTerms), removed.taskTermCount, REJECTED_MAX)
      : [];
  return { matches, totalMatches: total, source: 'database', rejected, snapshotAt: removed.snapshotAt };
}
