/**
 * --uri (and a study target's uri:): redis://, rediss://, the +cluster
 * forms and unix://, read as redis-cli reads them, and their passwords kept
 * out of anything printed.
 */
import { LIMITS } from './engine-js/limits.js';
import { checkSocketPath, parseInteger, shown } from './flag-values.js';
import { redactUri, rememberSecret } from './secrets.js';
import { UsageError } from './usage-error.js';

/** Highest --dbnum (Redis's `databases` is an int). */
export const MAX_DBNUM = 2 ** 31 - 1;

/** What a --uri (or a study target's uri) names. */
export interface ParsedUri {
  host: string | null;
  port: number | null;
  /** unix:///path: the socket path (host and port are then null). */
  socket: string | null;
  /** rediss:// (or rediss+cluster://) */
  tls: boolean;
  /** redis+cluster:// or rediss+cluster://: a seed of a Redis Cluster (as --cluster). */
  cluster: boolean;
  user: string | null;
  password: string | null;
  dbnum: number | null;
}

const URI_FORMS = 'redis://[user[:pass]@]host[:port][/db], rediss://… (TLS), redis+cluster:// or rediss+cluster:// (a cluster seed) or unix:///path[?db=N]';

export { redactUri } from './secrets.js';

function uriError(raw: string, what: string, why: string): UsageError {
  return new UsageError(`${what} must be ${URI_FORMS}${why ? ` (${why})` : ''} (got ${shown(redactUri(raw))})`);
}

function decodeUriPart(text: string, raw: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw uriError(raw, what, 'bad %-escape');
  }
}

/**
 * `redis://[user[:pass]@]host[:port][/db][?db=N]`, `rediss://…` and
 * `unix:///path[?db=N]`, as redis-cli reads them (and `redis+cluster://`,
 * `rediss+cluster://` for a cluster seed, as Lettuce and go-redis name it): `pass@` without a colon is
 * a password, %-escapes are decoded, the port defaults to 6379. `what` names
 * the flag or key in messages, which never show the password.
 */
export function parseUri(raw: string, what = '-u/--uri'): ParsedUri {
  const text = raw.trim();
  const scheme = /^([a-z+]+):\/\//i.exec(text);
  const named = scheme?.[1].toLowerCase() ?? '';
  const cluster = named.endsWith('+cluster');
  const kind = cluster ? named.slice(0, -'+cluster'.length) : named;
  if (!scheme || (kind !== 'redis' && kind !== 'rediss' && (kind !== 'unix' || cluster))) throw uriError(raw, what, 'unknown scheme');
  let rest = text.slice(scheme[0].length);
  let user: string | null = null;
  let password: string | null = null;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const info = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = info.indexOf(':');
    if (colon >= 0) {
      user = decodeUriPart(info.slice(0, colon), raw, what) || null;
      password = decodeUriPart(info.slice(colon + 1), raw, what);
    } else password = decodeUriPart(info, raw, what);
    if (password === '') password = null;
    rememberSecret(password);
  }
  const query = splitQuery(rest, raw, what);
  rest = query.before;
  if (kind === 'unix') {
    const socket = checkSocketPath(decodeUriPart(rest, raw, what), `${what} (unix://)`);
    if (!socket.startsWith('/')) throw uriError(raw, what, 'a unix socket needs an absolute path: unix:///path');
    return { host: null, port: null, socket, tls: false, cluster: false, user, password, dbnum: query.dbnum };
  }
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : '';
  const m = /^\[([^\]]+)\](?::(\d*))?$/.exec(authority) ?? /^([^[\]:]+)(?::(\d*))?$/.exec(authority);
  if (!m) throw uriError(raw, what, hostPortFault(authority));
  const port = m[2] ? parseInteger(`${what} port`, m[2], LIMITS.port) : 6379;
  if (path !== '' && !/^\d+$/.test(path)) throw uriError(raw, what, 'the path is a database number, /0 to /N');
  const pathDb = path === '' ? null : parseInteger(`${what} db`, path, [0, MAX_DBNUM]);
  if (pathDb !== null && query.dbnum !== null && pathDb !== query.dbnum) throw new UsageError(`${what}: /${pathDb} and ?db=${query.dbnum} both name the database: give one`);
  return { host: m[1], port, socket: null, tls: kind === 'rediss', cluster, user, password, dbnum: pathDb ?? query.dbnum };
}

/** Why `host[:port]` did not read: the text itself is not repeated (a login missing its `@` puts the password there). */
function hostPortFault(authority: string): string {
  if (authority === '') return 'no host';
  if (!authority.startsWith('[') && authority.split(':').length > 2) return 'an IPv6 address goes in brackets: [::1]:6379';
  if (authority.startsWith(':')) return 'no host';
  if (/^(\[[^\]]+\]|[^[\]:]+):/.test(authority)) return 'the port after the host must be a number from 1 to 65535';
  return 'the host is not a name or an address';
}

/**
 * The part after `?` (after the login, so a `?` in a password is the
 * password's): `db=N` is the only query, as redis-py and go-redis read it.
 */
function splitQuery(rest: string, raw: string, what: string): { before: string; dbnum: number | null } {
  const q = rest.indexOf('?');
  if (q < 0) return { before: rest, dbnum: null };
  let dbnum: number | null = null;
  for (const part of rest.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq >= 0 ? part.slice(0, eq) : part;
    const value = eq >= 0 ? part.slice(eq + 1) : '';
    if (key !== 'db') throw uriError(raw, what, `unknown query ${shown(key)}: the only query is ?db=N`);
    if (!/^\d+$/.test(value)) throw new UsageError(`${what}: ?db= must be a database number from 0 to ${MAX_DBNUM} (got ${shown(value)})`);
    const n = parseInteger(`${what} ?db=`, value, [0, MAX_DBNUM]);
    // Two that differ: which one the user meant is not ours to guess (as /N beside ?db=M).
    if (dbnum !== null && dbnum !== n) throw new UsageError(`${what}: ?db=${dbnum} and ?db=${n} both name the database: give one`);
    dbnum = n;
  }
  return { before: rest.slice(0, q), dbnum };
}
