/**
 * The notice for `--engine auto` falling back to the JS engine, said once:
 * on a platform without a prebuilt binary every run would otherwise repeat
 * it. After it is shown, a small state file under the user's cache
 * directory ($XDG_CACHE_HOME/respbench, else ~/.cache/respbench) remembers
 * the reason; the same reason is not shown again, a different one (an
 * upgrade that broke the binary, say) is. Where that file cannot be read or
 * written the notice is shown every time rather than never.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

const STATE_FILE = 'fallback-notices-shown';

/** The notice line for `reason`, or null when it was shown before on this machine. */
export function fallbackNoticeOnce(reason: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const text =
    `respbench: using the JS engine (native engine unavailable: ${reason}); ` +
    'pass --engine js to choose it and silence this notice, which is shown once';
  const dir = cacheDir(env);
  if (!dir) return text;
  const file = path.join(dir, STATE_FILE);
  let shown: string[] = [];
  try {
    shown = readFileSync(file, 'utf8').split('\n');
  } catch {
    // not shown yet (or unreadable: show it)
  }
  if (shown.includes(reason)) return null;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, [...shown.filter(Boolean), reason].join('\n') + '\n');
  } catch {
    // a read-only home: the notice stays, every time
  }
  return text;
}

function cacheDir(env: NodeJS.ProcessEnv): string | null {
  if (env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)) return path.join(env.XDG_CACHE_HOME, 'respbench');
  let home: string;
  try {
    home = env.HOME || homedir();
  } catch {
    return null;
  }
  return home ? path.join(home, '.cache', 'respbench') : null;
}
