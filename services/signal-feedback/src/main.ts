import { setFlagsFromString } from 'node:v8';
import { runService } from '@repo/service-kit';
import { compose } from './composition';
import { loadConfig } from './config';

// The only WebAssembly here is Prisma's query compiler, whose plans are cached per query shape: its
// baseline (Liftoff) code is fast enough, and skipping the optimising tier keeps ~15 MB of compiled code
// and compiler memory out of the process. Set here, before the first query compiles the module, so it
// holds however the process is started.
setFlagsFromString('--liftoff-only');

runService({ name: 'signal-feedback', loadConfig, compose: (context) => compose(context) });
