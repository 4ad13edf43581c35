import { runService } from '@repo/service-kit';
import { compose } from './composition';
import { loadConfig } from './config';

runService({ name: 'skill-router', loadConfig, compose });
