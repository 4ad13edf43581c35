import { runService } from '@repo/service-kit';
import { compose } from './composition';
import { loadConfig } from './config';

runService({ name: 'signal-feedback', loadConfig, compose: (context) => compose(context) });
