// Operator commands: `admin set-plan <email> <plan>`, `admin analyze-now` and
// `admin import-signals <product-id> <file|->`
// (pnpm --filter @repo/signal-feedback admin ...). Reads DATABASE_URL (and the LLM variables) like the service.
import { createLogger } from '@repo/service-kit';
import { loadConfig } from '../../config';
import { isPlanName, PLANS } from '../../domain/plans';
import { compose } from '../../composition';
import { SignalRepository } from '../../data/signals';
import { importSignals } from './import-signals';

const USAGE = `usage:
  admin set-plan <email> <${PLANS.join('|')}>   set a user's plan (billing is out of scope)
  admin analyze-now                            run one analysis pass over every due context
  admin import-signals <product-id> <file|->   import dated history (NDJSON, one POST /api/signals signal
                                               per line, timestamp required, at most 400 days old; not
                                               counted against the quota; '-' reads stdin)`;

const COMMANDS = ['set-plan', 'analyze-now', 'import-signals'];

/**
 * Runs one admin command (README, "Setting a user's plan (admin)" and "Importing history").
 * @param argv the arguments after the command name
 * @param env the environment: DATABASE_URL and the service's other variables
 * @param out where each line of output goes
 * @param stdin what `import-signals <id> -` reads (default: the process's)
 * @returns the process exit code (0 ok, 1 failure, 2 usage)
 */
export async function runAdmin(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: (line: string) => void = console.log,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<number> {
  const [command, ...args] = argv;
  if (
    command === undefined ||
    !COMMANDS.includes(command) ||
    (command === 'import-signals' && (args.length !== 2 || !args[0] || !args[1]))
  ) {
    out(USAGE);
    return 2;
  }
  const config = loadConfig(env);
  const logger = createLogger({
    name: 'signal-feedback-admin',
    level: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL,
  });
  const service = await compose({ config, logger });
  try {
    if (command === 'set-plan') {
      const [email, plan] = args;
      if (!email || !plan || !isPlanName(plan)) {
        out(USAGE);
        return 2;
      }
      if (!(await service.accounts.setPlan(email.toLowerCase(), plan))) {
        out(`no user with e-mail ${email}`);
        return 1;
      }
      out(`${email.toLowerCase()} is now on the ${plan} plan`);
      return 0;
    }
    if (command === 'import-signals') {
      const [productId = '', source = ''] = args;
      return await importSignals({
        signals: new SignalRepository(service.database.pool),
        productId,
        source,
        stdin,
        out,
      });
    }
    const r = await service.analysis.runOnce('cli');
    out(`analysed ${r.contextsAnalyzed} context(s), created ${r.proposalsCreated} proposal(s)`);
    for (const p of r.proposals) out(`  [${p.priority_score}] ${p.diagnosis}`);
    return 0;
  } finally {
    await service.close();
  }
}

if (require.main === module) {
  runAdmin(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
