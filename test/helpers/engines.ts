/**
 * Which engines the end-to-end tests run through: always js, and native
 * whenever its addon loads here (it is built by `pnpm install` when cargo is
 * present; CI builds it, so CI runs both).
 */
import { spawnSync } from 'node:child_process';
import { CLI } from './servers.js';

let cached: string[] | null = null;

export function nativeLoads(): boolean {
  const r = spawnSync(process.execPath, [CLI, '--engine', 'native', '--port', '1', '--requests', '1'], { encoding: 'utf8' });
  return !/cannot be loaded/.test(r.stderr);
}

export function engines(): string[] {
  if (cached) return cached;
  cached = ['js'];
  if (nativeLoads()) cached.push('native');
  else if (process.env.CI && process.env.RESPBENCH_REQUIRE_NATIVE === '1') {
    throw new Error('the native engine does not load, and RESPBENCH_REQUIRE_NATIVE=1');
  }
  return cached;
}
