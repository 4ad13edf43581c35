// The deployable services as the deployment checks see them: which there are, which have a database,
// the images built, and what each service's config schema reads (the variables and the HTTP port).
import { MarketIntelEnv } from '../services/market-intel/src/config';
import { RunnerEnv } from '../services/pipeline-runner/src/config';
import { SignalFeedbackEnv } from '../services/signal-feedback/src/config';
import { SkillRouterEnv } from '../services/skill-router/src/config';
import type { Problems } from './check-deploy-lib';

/** The four deployable services. */
export const SERVICES = ['market-intel', 'pipeline-runner', 'signal-feedback', 'skill-router'] as const;
/** One of {@link SERVICES}. */
export type ServiceName = (typeof SERVICES)[number];
/** Services with a PostgreSQL database and Prisma migrations. */
export const DB_SERVICES: readonly ServiceName[] = ['market-intel', 'signal-feedback', 'skill-router'];
/** Every image the images workflow builds (the services, the local ledger, the migrations). */
export const IMAGES = [...SERVICES, 'solana-localnet', 'migrate'] as const;

/** Each service's zod schema of its environment (its config.ts): the variables it reads, with their defaults. */
const CONFIG_SCHEMAS: Record<
  ServiceName,
  { shape: Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }> }
> = {
  'market-intel': MarketIntelEnv,
  'pipeline-runner': RunnerEnv,
  'signal-feedback': SignalFeedbackEnv,
  'skill-router': SkillRouterEnv,
};

/** The default of a service's `PORT`, read from its schema (undefined when it has none). */
function configPort(service: ServiceName): number | undefined {
  const port = CONFIG_SCHEMAS[service].shape.PORT?.safeParse(undefined);
  return port?.success && typeof port.data === 'number' ? port.data : undefined;
}

/** Variable names each service reads, by service. */
export const KEYS = Object.fromEntries(
  SERVICES.map((s) => [s, new Set(Object.keys(CONFIG_SCHEMAS[s].shape))]),
) as Record<ServiceName, Set<string>>;
/** Each service's HTTP port, by service. */
export const PORTS = Object.fromEntries(SERVICES.map((s) => [s, configPort(s)])) as Record<
  ServiceName,
  number | undefined
>;

/** Reports every name of `names` that `allowed` lacks: a variable the service would never read. */
export function checkNames(
  problems: Problems,
  where: string,
  names: Iterable<string>,
  allowed: Set<string>,
): void {
  for (const name of names)
    if (!allowed.has(name)) problems.add(where, `sets ${name}, which the service does not read`);
}
