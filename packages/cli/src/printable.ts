/**
 * Text from the user or the server (a key prefix, a host, a command
 * template, an error reply, a study label) shown on a terminal: control and
 * invisible characters are escaped, so a prefix holding ESC or CR cannot
 * move the cursor, recolour the screen or hide part of a line.
 */
import { refusedOutsideQuotes } from './engine-js/command.js';

/** Bidirectional overrides and isolates: they reorder what a terminal shows. */
function isBidiControl(cp: number): boolean {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp === 0x200e || cp === 0x200f || cp === 0x061c;
}

function needsEscape(cp: number): boolean {
  return cp === 0x09 || refusedOutsideQuotes(cp) || isBidiControl(cp) || (cp >= 0xd800 && cp <= 0xdfff);
}

const NAMED: Record<number, string> = { 0x09: '\\t', 0x0a: '\\n', 0x0d: '\\r' };

function escapeCodePoint(cp: number, style: 'human' | 'json'): string {
  if (NAMED[cp]) return NAMED[cp];
  if (style === 'json' || cp > 0xff) return style === 'json' ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\u{${cp.toString(16)}}`;
  return `\\x${cp.toString(16).padStart(2, '0')}`;
}

// Every code point (lone surrogates included, as themselves) that needsEscape may flag.
const CANDIDATES = /[\u0000-\u001f\u007f-\u00a0\u061c\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2069\u3000\ufeff]|[\ud800-\udfff]/gu;

/** `text` for a terminal: `a\x1b[31m` for a prefix holding ESC; plain text unchanged. */
export function printable(text: string): string {
  return text.replace(CANDIDATES, (ch) => {
    const cp = ch.codePointAt(0)!;
    return needsEscape(cp) ? escapeCodePoint(cp, 'human') : ch;
  });
}

/** `text` in double quotes as messages show a value the user gave (`(got "…")`). */
export function shownQuoted(text: string): string {
  // JSON.stringify escapes quotes, backslashes, C0 controls and lone surrogates; the rest is ours.
  return JSON.stringify(text).replace(CANDIDATES, (ch) => {
    const cp = ch.codePointAt(0)!;
    return needsEscape(cp) ? escapeCodePoint(cp, 'json') : ch;
  });
}

/** `host:port` for a terminal, an IPv6 address in brackets (`[::1]:6379`) as --host/--compare take it. */
export function printableTarget(host: string, port: number): string {
  return `${host.includes(':') ? `[${printable(host)}]` : printable(host)}:${port}`;
}

/** How a secret (a password, in a Plan, a URI or an argv) is shown: the real one goes to the engine only. */
export const SECRET_SHOWN = '***';
