// Puts the workspace manifest back after `pnpm pack` / `pnpm publish` (see prepack.mjs).
import { existsSync, renameSync } from 'node:fs';

const SAVED = new URL('../.package.json.workspace', import.meta.url);
if (existsSync(SAVED)) renameSync(SAVED, new URL('../package.json', import.meta.url));
