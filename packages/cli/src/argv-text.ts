/**
 * Command-line text must be UTF-8. Node decodes argv with replacement, so an
 * invalid byte arrives as U+FFFD and would silently become part of a key
 * prefix or a template. Where the raw bytes can be read (/proc/self/cmdline on
 * Linux) only arguments whose bytes are not UTF-8 are refused; elsewhere any
 * U+FFFD in an argument is.
 */
import { readFileSync } from 'node:fs';
import { UsageError } from './usage-error.js';
import { shownQuoted } from './printable.js';
import { maskArgv } from './meta.js';

const REPLACEMENT = '\uFFFD';

/** The last `count` arguments of this process as raw bytes, or null where they cannot be read. */
export function rawArgvTail(count: number): Buffer[] | null {
  try {
    const all = readFileSync('/proc/self/cmdline');
    const parts: Buffer[] = [];
    let start = 0;
    for (let i = 0; i < all.length; i++) {
      if (all[i] === 0) {
        parts.push(all.subarray(start, i));
        start = i + 1;
      }
    }
    if (start < all.length) parts.push(all.subarray(start));
    return parts.length >= count ? parts.slice(parts.length - count) : null;
  } catch {
    return null;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function isUtf8(bytes: Buffer): boolean {
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Throws a UsageError naming the flag whose value (or the argument) is not UTF-8. */
export function checkArgvText(argv: string[], raw: Buffer[] | null = rawArgvTail(argv.length)): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.includes(REPLACEMENT)) continue;
    if (raw && raw.length === argv.length && isUtf8(raw[i])) continue;
    const eq = /^(--?[A-Za-z][\w-]*)=/.exec(arg);
    const prev = i > 0 && /^--?[A-Za-z]/.test(argv[i - 1]) && !argv[i - 1].includes('=') ? argv[i - 1] : null;
    const what = eq ? eq[1] : /^--?[A-Za-z]/.test(arg) ? `the option ${shownQuoted(arg)}` : prev ?? `argument ${i + 1}`;
    throw new UsageError(`${what} is not valid UTF-8 text (got ${shownQuoted(maskArgv(argv)[i])}, where U+FFFD stands for the bad bytes); give it in UTF-8`);
  }
}
