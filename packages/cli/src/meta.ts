/**
 * What a result carries about where and how it was made (issue 14): the tool
 * and its version, the engine, when the measured phase started, the load
 * machine and the command line, secrets masked. The Plan is beside it in
 * the result (`plan`, its password shown as ***).
 */
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import type { EngineName } from './engine-js/plan.js';
import { redactUri, SECRET_SHOWN } from './secrets.js';

export interface RunMeta {
  tool: 'respbench';
  /** respbench's version (package.json). */
  version: string;
  engine: EngineName;
  /** When the measured phase started, ISO 8601 UTC, by this machine's clock. */
  startedAt: string;
  /** The load machine's host name. */
  hostname: string;
  /** The arguments after `respbench`, the password (-a/--pass) and --uri's password as ***. */
  commandLine: string[];
  /** The native engine: the I/O backend that ran (not the --io asked for), and why when not the one asked (auto fell back, TLS on epoll). */
  io?: { backend: 'io_uring' | 'epoll'; note: string | null };
}

export function toolVersion(): string {
  return (createRequire(import.meta.url)('../package.json') as { version: string }).version;
}

/** The flags whose value is a password, and the one whose value is a URI that may hold one. */
const SECRET_FLAGS = new Set(['-a', '--pass']);
const URI_FLAGS = new Set(['-u', '--uri']);

/**
 * The program's one-letter flags that take a value; the others (-3, -I, -l,
 * -q, -V) are switches. Pinned against the program's own options by
 * test/meta.test.ts. Commander reads `-3qa PW` as -3 -q -a PW and `-qaPW`
 * as -q -a PW: a switch letter goes on to the next, a value letter takes
 * the rest of the word or, when nothing follows it, the next word.
 */
export const SHORT_FLAGS_WITH_VALUE = new Set(['P', 'a', 'c', 'd', 'h', 'n', 'o', 'p', 'r', 's', 't', 'u', 'x']);

/** A bundle of one-letter flags (`-3qa`, `-qaPW`, `-p6379`) as shown: the password of -a hidden, the URI of -u redacted; `valueNext` when its last letter takes the next word. */
function maskBundle(word: string): { shown: string; valueNext: string | null } {
  for (let j = 1; j < word.length; j++) {
    const letter = word[j];
    if (!SHORT_FLAGS_WITH_VALUE.has(letter)) continue;
    const rest = word.slice(j + 1);
    if (rest === '') return { shown: word, valueNext: letter };
    if (letter === 'a') return { shown: `${word.slice(0, j + 1)}${SECRET_SHOWN}`, valueNext: null };
    if (letter === 'u') return { shown: `${word.slice(0, j + 1)}${redactUri(rest)}`, valueNext: null };
    return { shown: word, valueNext: null };
  }
  return { shown: word, valueNext: null };
}

/** argv with every password shown as *** (the value after -a/--pass, --pass=…, -a…, -qa …; the password inside --uri). */
export function maskArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (SECRET_FLAGS.has(a) && i + 1 < argv.length) {
      out.push(a, SECRET_SHOWN);
      i++;
    } else if (URI_FLAGS.has(a) && i + 1 < argv.length) {
      out.push(a, redactUri(argv[i + 1]));
      i++;
    } else if (a.startsWith('--pass=')) out.push(`--pass=${SECRET_SHOWN}`);
    else if (a.startsWith('--uri=')) out.push(`--uri=${redactUri(a.slice('--uri='.length))}`);
    else if (/^-[^-]/.test(a)) {
      const { shown, valueNext } = maskBundle(a);
      out.push(shown);
      if (valueNext !== null && i + 1 < argv.length) {
        i++;
        out.push(valueNext === 'a' ? SECRET_SHOWN : valueNext === 'u' ? redactUri(argv[i]) : argv[i]);
      }
    } else out.push(a);
  }
  return out;
}

export function runMeta(engine: EngineName, startedUnixMs: number, argv: readonly string[], io?: RunMeta['io']): RunMeta {
  const meta: RunMeta = { tool: 'respbench', version: toolVersion(), engine, startedAt: new Date(startedUnixMs).toISOString(), hostname: hostname(), commandLine: maskArgv(argv) };
  if (io) meta.io = io;
  return meta;
}
