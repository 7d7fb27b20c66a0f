/**
 * How a secret is kept out of everything printed or written: a password from
 * -a/--pass, REDISCLI_AUTH, a URI, a study file or a hand-edited result file
 * reaches the engine and nowhere else. Every place that shows a Plan, a URI,
 * an input file's fields or a text that may quote a password goes through
 * one of these functions, so a new output path cannot forget the rule.
 */
import { SECRET_SHOWN } from './printable.js';

export { SECRET_SHOWN };

/**
 * A URI (well formed or not) with its password replaced by ***. The
 * password is everything between `//user:` and the LAST `@` (where
 * parseUri takes it from), so a password holding `@`, `/` or `%` is hidden
 * whole; `pass@` without a colon is all secret. Text with no `@` holds no
 * password and is returned as given.
 */
export function redactUri(uri: string): string {
  const at = uri.lastIndexOf('@');
  if (at < 0) {
    // `redis://user:password` with the `@host` forgotten: what follows the colon is no port, so it may be the password.
    const m = /^(\s*[a-z][a-z0-9+.-]*:\/\/[^/?#:@]*:)([^/?#]*)/i.exec(uri);
    return m && !/^\d*$/.test(m[2]) ? `${m[1]}${SECRET_SHOWN}${uri.slice(m[0].length)}` : uri;
  }
  const scheme = /^\s*[a-z][a-z0-9+.-]*:\/\//i.exec(uri);
  const start = scheme ? scheme[0].length : 0;
  if (at < start) return uri;
  const info = uri.slice(start, at);
  const colon = scheme ? info.indexOf(':') : -1;
  const shownInfo = colon >= 0 ? `${info.slice(0, colon)}:${SECRET_SHOWN}` : SECRET_SHOWN;
  return `${uri.slice(0, start)}${shownInfo}${uri.slice(at)}`;
}

/**
 * Field and flag names whose value is a secret wherever they appear (a Plan,
 * a study target, a result file someone edited, a server's flags): any name
 * that holds pass, auth, secret or token (`authToken`, `--masterauth`,
 * `tlsKeyPassphrase`), unless it names where one is kept (`--auth-file`,
 * `passwordPath`): a file's name is no secret. (A study target's
 * `credentials` is no secret as a whole: its `password` is.) Hiding a
 * harmless value is the cheap mistake; showing a password is not.
 */
const SECRET_KEY = /^(?!.*(file|path|dir)$).*(pass|auth|secret|token)/i;

/** A string that is a URI with a login in it (`scheme://…@…`); other strings (a key prefix with an `@`) are data. */
const LOOKS_LIKE_URI_WITH_LOGIN = /^\s*[a-z][a-z0-9+.-]*:\/\/\S*@/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/**
 * `value` with every secret field (at any depth) shown as ***, and any URI
 * string redacted: what a Plan or an input file's fields may be printed as.
 * Null and absent secrets stay as they are (they say "no password"). What
 * holds no secret is returned as it is (the same object), so a Plan with
 * no password is the Plan.
 */
export function redactSecrets<T>(value: T): T {
  if (typeof value === 'string') return (LOOKS_LIKE_URI_WITH_LOGIN.test(value) ? redactUri(value) : value) as T;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const shown = value.map((v) => redactSecrets(v));
    return (shown.some((v, i) => v !== value[i]) ? shown : value) as T;
  }
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = isSecretKey(k) && v !== null && v !== undefined && v !== SECRET_SHOWN ? SECRET_SHOWN : redactSecrets(v);
    if (out[k] !== v) changed = true;
  }
  return (changed ? out : value) as T;
}

/** `text` with every occurrence of each secret (as given and %-encoded, as a URI holds it) replaced by ***. */
export function redactText(text: string, ...secrets: (string | null | undefined)[]): string {
  let out = text;
  for (const s of secrets) {
    if (!s) continue;
    for (const form of new Set([s, encodeURIComponent(s)])) out = out.split(form).join(SECRET_SHOWN);
  }
  return out;
}

/**
 * A command line (a study's `command:` target) as it may be shown: the value
 * after a flag or directive whose name is a secret's (`--requirepass X`,
 * `--masterauth=X`, `-a X`, `requirepass X`) and each of `secrets` as ***.
 */
export function redactCommandLine(line: string, ...secrets: (string | null | undefined)[]): string {
  const words = line.split(/(\s+)/);
  let hideNext = false;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === '' || /^\s+$/.test(w)) continue;
    if (hideNext) {
      words[i] = SECRET_SHOWN;
      hideNext = false;
      continue;
    }
    const flag = /^(-{1,2})?([A-Za-z][\w-]*)(=(.*))?$/.exec(w);
    if (!flag) continue;
    const secret = isSecretKey(flag[2]) || (flag[1] === '-' && flag[2] === 'a');
    if (!secret) continue;
    if (flag[3] !== undefined) words[i] = `${flag[1] ?? ''}${flag[2]}=${SECRET_SHOWN}`;
    else hideNext = true;
  }
  return redactText(words.join(''), ...secrets);
}

/**
 * Secrets shorter than this are not searched for in free text: replacing
 * every "1" of the figures for a password "1" would wreck the output, and
 * the structured redaction (Plans, URIs, argv) hides them anyway.
 */
export const MIN_SEARCHED_SECRET = 4;

/** Every password this process was given (flag, URI, environment, study file): the last net over what it prints. */
const known = new Set<string>();

/** Remembers a password so that no text this process prints can carry it (see redactingIo). */
export function rememberSecret(secret: string | null | undefined): void {
  if (secret && secret.length >= MIN_SEARCHED_SECRET) known.add(secret);
}

/** `text` with every remembered password replaced by ***. */
export function redactKnown(text: string): string {
  return known.size === 0 ? text : redactText(text, ...known);
}

/** Writers that pass everything through redactKnown: what the CLI prints on stdout and stderr. */
export function redactingIo<T extends { stdout: (t: string) => void; stderr: (t: string) => void }>(io: T): T {
  return { ...io, stdout: (t: string) => io.stdout(redactKnown(t)), stderr: (t: string) => io.stderr(redactKnown(t)) };
}
