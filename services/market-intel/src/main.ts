import { runService } from '@repo/service-kit';
import { loadConfig } from './config';
import { compose } from './composition';

runService({
  name: 'market-intel',
  loadConfig: () => loadConfig(),
  compose: ({ config, logger }) => compose(config, logger),
});
