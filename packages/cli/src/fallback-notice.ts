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

/** Where the native engine's binary was looked for and what this install is, for missingBinaryReason. */
export interface NativeInstall {
  /** napi's name for this platform: linux-x64-gnu, darwin-arm64, win32-x64-msvc, … */
  triple: string;
  /** @respbench/native is a source checkout (its Cargo.toml beside it): the binary is built there, not installed. */
  sourceCheckout: boolean;
  /** The platform packages @respbench/native lists as optional dependencies (its prebuilt binaries). */
  prebuilt: readonly string[];
}

/**
 * Why no native binary loaded, with the step that fixes it. The usual cause
 * on a published install is the optional dependency with this platform's
 * binary left out (`npm i --omit=optional`, a lockfile written on another
 * platform): installing that package fixes it, and no cargo is needed.
 * Building with cargo is the fix only in a source checkout or on a platform
 * with no prebuilt binary.
 */
export function missingBinaryReason(install: NativeInstall): string {
  const pkg = `@respbench/native-${install.triple}`;
  if (install.sourceCheckout) return `no native binary for ${install.triple} built in this checkout (building needs cargo: pnpm --filter @respbench/native build)`;
  if (install.prebuilt.includes(pkg)) return `no native binary for ${install.triple}: the optional dependency ${pkg} is not installed (left out by --omit=optional or a lockfile from another platform?); npm i ${pkg}`;
  return `no prebuilt native binary for ${install.triple} (building from source needs cargo)`;
}

/** napi's platform name for this process: the suffix of the @respbench/native-* package it needs. */
export function napiTriple(platform: string = process.platform, arch: string = process.arch): string {
  if (platform === 'win32') return `${platform}-${arch}-msvc`;
  if (platform !== 'linux') return `${platform}-${arch}`;
  // glibc reports its version; musl (Alpine) does not.
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return `${platform}-${arch}-${header?.glibcVersionRuntime ? 'gnu' : 'musl'}`;
}
