import { z } from 'zod';

/**
 * The one error every configuration check throws: by {@link parseConfig} when the environment is
 * invalid, and by services for checks made after parsing (variables that go together, files a
 * variable names). Its message is `Invalid configuration:` and one indented line per problem, which
 * is what a refused boot prints.
 */
export class ConfigError extends Error {
  /** One entry per problem: `NAME: message`, or a sentence naming the variables. */
  readonly problems: string[];
  /**
   * @param problems the problems, `NAME: message` each
   * @param options `cause`: the error behind the problem (e.g. a file that could not be read)
   */
  constructor(problems: string[], options?: ErrorOptions) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`, options);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * Parses the environment once with a zod object schema whose keys are variable names. Blank strings
 * count as unset, so `FOO=` falls back to the default (README, "Configuration").
 * @param schema a zod object schema over environment variable names
 * @param env the environment, `process.env` by default
 * @returns the parsed, typed configuration
 * @throws ConfigError naming every invalid variable
 */
export function parseConfig<T extends z.ZodObject>(
  schema: T,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<T> {
  const cleaned: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value.trim() !== '') cleaned[key] = value;
  }
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
  }
  return result.data;
}

/**
 * Refuses settings that only work in pairs when one of a pair is set without the other (a URL and
 * the credential or address it needs), after {@link parseConfig} (README, "Configuration").
 * @param config the parsed configuration
 * @param pairs the names of the variables set together or not at all
 * @throws ConfigError with one `A and B must be set together` per pair set only in part
 */
export function assertSetTogether<C extends object>(
  config: C,
  pairs: readonly (readonly [keyof C & string, keyof C & string])[],
): void {
  const unpaired = pairs.filter(([a, b]) => Boolean(config[a]) !== Boolean(config[b]));
  if (unpaired.length > 0)
    throw new ConfigError(unpaired.map(([a, b]) => `${a} and ${b} must be set together`));
}

/** An integer environment variable within `[min, max]`, with a default. */
export function intVar(defaultValue: number, min = 0, max = Number.MAX_SAFE_INTEGER) {
  return z.coerce.number().int().min(min).max(max).default(defaultValue);
}

/** A boolean environment variable: `true/false/1/0/yes/no`, with a default. */
export function boolVar(defaultValue: boolean) {
  return z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(defaultValue ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');
}

/** Shared variables of every HTTP service: `HOST`, `LOG_LEVEL`, `NODE_ENV`, `TRUST_PROXY` (hop count), body limit. */
export const BaseHttpEnv = {
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  TRUST_PROXY: intVar(0, 0, 10),
  BODY_LIMIT: z.string().default('100kb'),
  CORS_ORIGINS: z.string().optional(),
  SHUTDOWN_TIMEOUT_MS: intVar(10_000, 100),
  /**
   * Milliseconds between readiness turning false and the HTTP port closing on shutdown, so load
   * balancers (Kubernetes endpoints) stop sending new connections first; 0 closes at once.
   */
  SHUTDOWN_DRAIN_DELAY_MS: intVar(0, 0, 60_000),
};

/** A TCP port variable (0 to 65535; 0 takes a free port), with a default. */
export function portVar(defaultPort: number) {
  return intVar(defaultPort, 0, 65535);
}

/**
 * The variables of a service with a public API: {@link BaseHttpEnv}, `PORT`, the public port, and
 * `METRICS_PORT`, the port of `/metrics` (Prometheus), apart from the public one so the Ingress
 * never serves it (see `listenMetrics`).
 * @param port the default of `PORT`
 * @param metricsPort the default of `METRICS_PORT`
 */
export function publicServiceEnv(port: number, metricsPort: number) {
  return { ...BaseHttpEnv, PORT: portVar(port), METRICS_PORT: portVar(metricsPort) };
}

/**
 * The PostgreSQL variables of a service with a database: `DATABASE_URL` (a `postgres://` or
 * `postgresql://` URL, required) and `DATABASE_POOL_SIZE` (connections of each replica's pool, 1 to
 * 200, default 10).
 */
export const DatabaseEnv = {
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL'),
  DATABASE_POOL_SIZE: intVar(10, 1, 200),
};

/**
 * `AMQP_URL`, the RabbitMQ URL (`amqp://` or `amqps://`); the local broker with RabbitMQ's default
 * credentials by default, which production refuses (a `broker` production check).
 */
export const BrokerEnv = {
  AMQP_URL: z
    .string()
    .regex(/^amqps?:\/\//, 'must be an amqp:// or amqps:// URL')
    .default('amqp://guest:guest@127.0.0.1:5672'),
};

/**
 * An optional name of this replica in RabbitMQ and in its messages (1 to 100 letters, digits, `.`,
 * `_` or `-`); unset, the service makes one from the host name and the process id.
 */
export function replicaIdVar() {
  return z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/)
    .optional();
}
