import { ConfigError } from '../config';

/**
 * The `ConfigError` a configuration loader throws for `env`.
 * @param load the service's `loadConfig`
 * @throws Error when it accepts the configuration, or whatever else it throws
 */
export function configRefusal(
  load: (env: NodeJS.ProcessEnv) => unknown,
  env: NodeJS.ProcessEnv,
): ConfigError {
  try {
    load(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}
