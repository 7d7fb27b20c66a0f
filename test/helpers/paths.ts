/** Where the repository and the built CLI are: for the helpers and for the suite's global setup, which runs outside any test file. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The bin users run (package.json's bin): the bundle of dist's modules, packages/cli/scripts/bundle.mjs. */
export const CLI = path.join(REPO, 'packages', 'cli', 'bundle', 'bin.js');
