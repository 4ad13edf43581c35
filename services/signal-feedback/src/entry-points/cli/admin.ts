// Operator commands: `admin set-plan <email> <plan>` and `admin analyze-now`
// (pnpm --filter @repo/signal-feedback admin ...). Reads DATABASE_URL (and the LLM variables) like the service.
import { createLogger } from '@repo/service-kit';
import { loadConfig } from '../../config';
import { isPlanName, PLANS } from '../../domain/plans';
import { compose } from '../../composition';

const USAGE = `usage:
  admin set-plan <email> <${PLANS.join('|')}>   set a user's plan (billing is out of scope)
  admin analyze-now                            run one analysis pass over every due context`;

/**
 * Runs one admin command.
 * @param argv the arguments after the command name
 * @returns the process exit code (0 ok, 1 failure, 2 usage)
 */
export async function runAdmin(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: (line: string) => void = console.log,
): Promise<number> {
  const [command, ...args] = argv;
  if (command !== 'set-plan' && command !== 'analyze-now') {
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
