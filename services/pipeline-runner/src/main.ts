import { runService } from '@repo/service-kit';
import { loadConfig } from './config';
import { compose } from './composition';

// Unbuffered logs: tests read the output of a runner they SIGKILL.
runService({ name: 'pipeline-runner', loadConfig: () => loadConfig(), compose, bufferedLogs: false });
