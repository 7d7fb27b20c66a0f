/**
 * The byte stream under a connection: TCP, a unix socket, or TLS over TCP
 * (node:tls), as one net.Socket the connection reads and writes without
 * knowing which. The TLS handshake is done before `connectTransport`
 * resolves, with its own timeout, so the run loop only sees application
 * bytes. Paired with crates/respbench-core/src/transport.rs: the same error
 * texts, the same cipher names.
 */
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { Plan, TlsPlan } from './plan.js';
import { sharedReads } from './reads.js';
import { readCaFolder } from '../ca-folder.js';
import { pemCertificates, type PemCertificate } from '../pem-certificates.js';
import { chainOf, explicitEcKey, NO_CERT_SIGN, signedByNonCa, signedWithoutCertSign, tooWeak } from './tls-chain.js';

/**
 * The TLS 1.2 ciphers both engines' TLS libraries have, by the OpenSSL names
 * --tls-ciphers takes (as redis-cli's), and the TLS 1.3 suites
 * --tls-ciphersuites takes. The native engine (rustls) has no other.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-RSA-CHACHA20-POLY1305',
] as const;
export const TLS13_CIPHERSUITES = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'] as const;

/** Ctrl-C or SIGTERM while connections were opening. */
export class ConnectInterrupted extends Error {
  constructor() {
    super('interrupted while connecting');
  }
}

/** Errors on open sockets that no Connection listened to yet. */
export const earlyErrors = new WeakMap<net.Socket, Error>();

/** Where each unix socket goes (Node has no remoteAddress for them), for messages. */
const unixPaths = new WeakMap<net.Socket, string>();

/** Where the stream goes, for messages: `ip:port` or the socket path. */
export function peerLabel(socket: net.Socket): string | null {
  const unix = unixPaths.get(socket);
  if (unix !== undefined) return unix;
  return socket.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : null;
}

/**
 * Opens the plan's transport: a unix socket when plan.socket is set, TCP to
 * host:port otherwise, with TLS over it when plan.tls is set, the handshake
 * done. Gives up after `timeoutMs` for the connect and again for the
 * handshake.
 */
export async function connectTransport(plan: Plan, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
  if (plan.socket !== null && plan.socket !== undefined) return connectUnix(plan.socket, timeoutMs, signal);
  if (!plan.tls) return connectTcp(plan.host, plan.port, timeoutMs, signal, true);
  const t = plan.tls;
  const socket = await connectTcp(plan.host, plan.port, timeoutMs, signal, false).catch((err: NodeJS.ErrnoException) => {
    // A server that resets at once may do it before the handshake starts:
    // the same story as a reset during it, as the native engine tells it.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE') throw new Error(`TLS handshake with ${plan.host}:${plan.port} failed: ${closedDuringHandshake(t)}`);
    throw err;
  });
  return startTls(socket, plan, t, timeoutMs, signal);
}

/** A net.Socket's connect within `timeoutMs`, cancelled by `signal`. */
function whenConnected(
  socket: net.Socket,
  event: 'connect' | 'secureConnect',
  timeoutMs: number,
  signal: AbortSignal | undefined,
  timedOut: () => Error,
  failed: (err: NodeJS.ErrnoException) => Error,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      socket.destroy();
      return reject(new ConnectInterrupted());
    }
    const settle = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.removeListener('error', onError);
    };
    const onAbort = () => {
      settle();
      socket.destroy();
      reject(new ConnectInterrupted());
    };
    const timer = timeoutMs > 0 ? setTimeout(() => {
      settle();
      socket.destroy();
      reject(timedOut());
    }, timeoutMs) : null;
    signal?.addEventListener('abort', onAbort, { once: true });
    const onError = (err: NodeJS.ErrnoException) => {
      settle();
      socket.destroy();
      reject(failed(err));
    };
    socket.once(event, () => {
      settle();
      // Until a Connection takes the socket over (the other connections
      // are still opening), an error must be kept, not thrown as uncaught.
      socket.on('error', (err) => {
        if (!earlyErrors.has(socket)) earlyErrors.set(socket, err);
      });
      resolve(socket);
    });
    socket.on('error', onError);
  });
}

/** A TCP connection to host:port within `timeoutMs`; `plain`: read into the shared buffer (reads.ts), not under TLS. */
function connectTcp(host: string, port: number, timeoutMs: number, signal: AbortSignal | undefined, plain: boolean): Promise<net.Socket> {
  if (signal?.aborted) return Promise.reject(new ConnectInterrupted());
  const reads = plain ? sharedReads() : null;
  return whenConnected(
    reads ? reads.bind(net.connect({ host, port, onread: reads.onread })) : net.connect({ host, port }),
    'connect',
    timeoutMs,
    signal,
    () => new Error(`connect to ${host}:${port} timed out after ${timeoutMs} ms`),
    (err) => Object.assign(new Error(connectErrorText(host, port, err)), { code: err.code }),
  );
}

function connectErrorText(host: string, port: number, err: NodeJS.ErrnoException): string {
  if (err.code === 'ECONNREFUSED') return `connection refused by ${host}:${port} (is the server running on that port?)`;
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `cannot resolve host "${host}"`;
  if (err.code === 'EMFILE' || err.code === 'ENFILE') {
    return `cannot open another connection to ${host}:${port}: the open-file limit is too low for this many connections (raise it, e.g. ulimit -n 65536, or use fewer -c)`;
  }
  return `cannot connect to ${host}:${port}: ${err.message}`;
}

/** A unix-socket connection to `socketPath`. */
async function connectUnix(socketPath: string, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
  if (signal?.aborted) throw new ConnectInterrupted();
  const fail = (why: string) => new Error(`cannot connect to unix socket ${socketPath}: ${why}`);
  const reads = sharedReads();
  const socket = await whenConnected(
    reads.bind(net.connect({ path: socketPath, onread: reads.onread })),
    'connect',
    timeoutMs,
    signal,
    () => fail(`timed out after ${timeoutMs} ms`),
    (err) => {
      if (err.code === 'ENOENT') return fail('no such socket (is the server listening on it?)');
      if (err.code === 'ECONNREFUSED') return fail('connection refused (is the server running?)');
      if (err.code === 'EACCES') return fail('permission denied');
      return fail(err.message);
    },
  );
  unixPaths.set(socket, socketPath);
  return socket;
}

/** What node:tls needs from a TlsPlan, read once per plan: the files are not read per connection. */
const secureOptions = new WeakMap<TlsPlan, tls.ConnectionOptions>();
/** Plans whose --cacert/--cacertdir hold a CA whose trust settings reject servers (pem-certificates.ts `Trust`). */
const distrustingPlans = new WeakSet<TlsPlan>();

/** The system's roots plus --cacert and what OpenSSL would find in --cacertdir; client cert; ciphers. */
function tlsOptions(t: TlsPlan): tls.ConnectionOptions {
  const known = secureOptions.get(t);
  if (known) return known;
  const read = (flag: string, file: string): string => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`${flag} ${file}: cannot read it (${(err as Error).message})`);
    }
  };
  // Verified once the handshake is done (verdict): the chain is then there to word a refusal.
  const options: tls.ConnectionOptions = { rejectUnauthorized: false };
  if (t.cacert !== null || t.cacertdir !== null) {
    const ca: string[] = [...tls.rootCertificates];
    if (t.cacert !== null) {
      // As written: Node's OpenSSL applies a TRUSTED CERTIFICATE's trust settings, as redis-cli's does.
      const blocks = pemCertificates(read('--cacert', t.cacert), 'ca-file');
      if (blocks.length === 0) throw new Error(`--cacert ${t.cacert}: no PEM certificate in it`);
      ca.push(...blocks.map((b) => b.pem));
      if (blocks.some(distrusts)) distrustingPlans.add(t);
    }
    if (t.cacertdir !== null) {
      try {
        // What OpenSSL (redis-cli) would find there: ca-folder.ts.
        const found = readCaFolder(t.cacertdir).found;
        ca.push(...found.map((b) => b.pem));
        if (found.some(distrusts)) distrustingPlans.add(t);
      } catch (err) {
        throw new Error(`--cacertdir ${t.cacertdir}: cannot read it (${(err as Error).message})`);
      }
    }
    options.ca = ca;
  }
  if ((t.cert === null) !== (t.key === null)) throw new Error('--cert and --key go together');
  if (t.cert !== null && t.key !== null) {
    options.cert = read('--cert', t.cert);
    options.key = read('--key', t.key);
  }
  if (t.ciphers !== null || t.ciphersuites !== null) {
    const tls13 = t.ciphersuites ?? TLS13_CIPHERSUITES.join(':');
    const tls12 = t.ciphers ?? TLS12_CIPHERS.join(':');
    options.ciphers = [tls13, tls12].filter((s) => s.length > 0).join(':');
  } else {
    // The same offer as the native engine: only what rustls has.
    options.ciphers = [...TLS13_CIPHERSUITES, ...TLS12_CIPHERS].join(':');
  }
  secureOptions.set(t, options);
  return options;
}

/** TLS over a connected TCP socket, the handshake done within `timeoutMs`. */
function startTls(
  raw: net.Socket,
  plan: Plan,
  t: TlsPlan,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<net.Socket> {
  const { host, port } = plan;
  raw.removeAllListeners('error');
  let options: tls.ConnectionOptions;
  try {
    options = tlsOptions(t);
  } catch (err) {
    raw.destroy();
    return Promise.reject(err);
  }
  // Nagle off on the TCP socket itself: setNoDelay on the TLS socket later
  // may not reach a socket it wraps.
  raw.setNoDelay(true);
  const name = t.sni ?? host;
  const peer = `${host}:${port}`;
  const secure = tls.connect({
    ...options,
    socket: raw,
    host: name,
    // SNI carries a name, never an address.
    servername: net.isIP(name) ? undefined : name,
  });
  raw.on('error', () => {
    // The TLS socket reports it.
  });
  const probe = probePlainText(plan, raw, secure, timeoutMs);
  return whenConnected(
    secure,
    'secureConnect',
    timeoutMs,
    signal,
    () => new Error(`TLS handshake with ${peer} failed: handshake timeout after ${timeoutMs} ms (is that port speaking TLS?)`),
    (err) => new Error(`TLS handshake with ${peer} failed: ${tlsReason(err, name, t)}`),
  ).finally(() => clearTimeout(probe)).then((socket) => {
    const refused = t.insecure ? null : verdict(socket as tls.TLSSocket, name, t);
    if (refused !== null) {
      socket.destroy();
      throw new Error(`TLS handshake with ${peer} failed: ${refused}`);
    }
    // Before the Connection's own listener: OpenSSL's multi-line text
    // becomes the one line the native engine writes for the same alert.
    socket.prependListener('error', (err: NodeJS.ErrnoException) => {
      if (err.code?.startsWith('ERR_SSL') || /SSL routines/.test(err.message)) err.message = tlsRunText(err.message);
    });
    return socket;
  });
}

/**
 * `--tls` against a port that speaks plain text: a plain Redis reads the
 * ClientHello as an inline command and, when no newline happens to be in
 * it, waits for the rest, so the handshake would hang until its timeout.
 * When a handshake has not finished after PROBE_AFTER_MS, one plain PING on
 * a second connection asks the port: a RESP reply means it is not TLS. Once
 * per run (a slow TLS server is not probed by every connection). Paired with
 * crates/respbench-core/src/tls_probe.rs: the same PING, delay and words.
 */
const PROBE_AFTER_MS = 250;
export const PLAIN_TEXT = 'the server answered in plain text: drop --tls';
const probedRuns = new WeakSet<Plan>();

/** The timer of the run's one probe, which ends the handshake with PLAIN_TEXT if the port answers RESP. */
function probePlainText(plan: Plan, raw: net.Socket, secure: tls.TLSSocket, timeoutMs: number): NodeJS.Timeout {
  const deadline = Date.now() + timeoutMs;
  let established = false;
  secure.once('secureConnect', () => (established = true));
  const timer = setTimeout(() => {
    if (probedRuns.has(plan) || raw.remoteAddress === undefined || raw.remotePort === undefined) return;
    probedRuns.add(plan);
    void answersPlainText(raw.remoteAddress, raw.remotePort, deadline - Date.now()).then((plain) => {
      if (plain && !established && !secure.destroyed) {
        secure.destroy(Object.assign(new Error(PLAIN_TEXT), { code: 'RESPBENCH_PLAIN_TEXT' }));
      }
    });
  }, Math.min(PROBE_AFTER_MS, timeoutMs));
  timer.unref();
  return timer;
}

/** The first byte of any RESP2/RESP3 reply. */
const RESP_TYPES = new Set([...'+-:$*_,#!=(%~|>'].map((c) => c.charCodeAt(0)));

/** Whether `PING` in RESP on a new plain connection gets a RESP reply within `timeoutMs` (a TLS server closes or sends an alert, 0x15). */
function answersPlainText(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (timeoutMs <= 0) return resolve(false);
    const sock = net.connect({ host, port });
    const done = (plain: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(plain);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    sock.once('connect', () => sock.write('*1\r\n$4\r\nPING\r\n'));
    sock.once('data', (d: Buffer) => done(RESP_TYPES.has(d[0])));
    sock.once('error', () => done(false));
    sock.once('close', () => done(false));
  });
}

/**
 * A TLS error after the handshake (a TLS 1.3 server refuses a client
 * certificate only then), as the native engine words it.
 */
function tlsRunText(message: string): string {
  const alert = alertName(message);
  if (alert !== null) return `TLS alert "${alert}" from the server: ${alertHint(alert)}`;
  return `TLS error: ${opensslReason(message)}`;
}

/** `error:0A000102:SSL routines::unsupported protocol` → `unsupported protocol`: OpenSSL's reason without its codes. */
function opensslReason(message: string): string {
  const first = message.split('\n')[0];
  return /SSL routines:[^:]*:(.+)$/.exec(first)?.[1].trim() ?? first;
}

/** `error:0A00045C:SSL routines::tlsv13 alert certificate required` → `certificate required`. */
function alertName(message: string): string | null {
  const m = /(?:sslv3|tlsv1\d*) alert ([a-z0-9 ]+?)\s*(?::|$)/i.exec(message.split('\n')[0]);
  return m ? m[1].toLowerCase() : null;
}

/** What an alert from the server most likely means, in the user's flags; the native engine's table (tls.rs `alert_hint`). */
function alertHint(alert: string): string {
  if (alert === 'certificate required') return 'it requires a client certificate (--cert/--key)';
  if (alert === 'unknown ca') return 'it does not trust the CA that signed the client certificate (--cert)';
  if (['bad certificate', 'certificate unknown', 'unsupported certificate', 'certificate expired', 'certificate revoked', 'access denied'].includes(alert)) {
    return 'it refused the client certificate (--cert)';
  }
  if (['handshake failure', 'insufficient security', 'protocol version'].includes(alert)) {
    return 'no TLS version, cipher or signature scheme both sides accept (--tls-ciphers/--tls-ciphersuites)';
  }
  return 'does it require a client certificate? --cert/--key';
}

function closedDuringHandshake(t: TlsPlan): string {
  return `the server closed the connection during the handshake${t.cert === null ? ' (does it require a client certificate? --cert/--key)' : ''}`;
}

const NOT_TRUSTED = "certificate not trusted (not signed by a CA in --cacert/--cacertdir or the system's roots; --insecure skips the check)";

/**
 * Why a finished handshake's server is not trusted, or null: OpenSSL's
 * verification result (and the name check) in the native engine's words,
 * with the chain read where OpenSSL's code alone says too little (a CA:FALSE
 * certificate that signed another is "unsupported certificate purpose" to
 * it) or too much (a key or digest redis-cli's OpenSSL refuses: tls-chain.ts).
 */
function verdict(socket: tls.TLSSocket, name: string, t: TlsPlan): string | null {
  const code = socket.authorized ? null : String(socket.authorizationError ?? 'UNSPECIFIED');
  // Trust settings that reject servers come out of Node's OpenSSL as a purpose the certificate lacks.
  if (distrustingPlans.has(t) && (code === 'INVALID_PURPOSE' || code === 'CERT_REJECTED' || code === 'CERT_UNTRUSTED')) return DISTRUSTED;
  // Only when OpenSSL took the chain, or refused it for a signature or its strength.
  const strength = code === null || ['CA_MD_TOO_WEAK', 'EE_KEY_TOO_SMALL', 'CA_KEY_TOO_SMALL', 'CERT_SIGNATURE_FAILURE', 'UNSPECIFIED'].includes(code);
  const needsChain = strength || code === 'INVALID_PURPOSE' || code === 'INVALID_CA';
  const chain = needsChain ? chainOf(socket.getPeerCertificate(true)) : [];
  const weak = strength ? tooWeak(chain) : null;
  if (weak !== null || code === null) return weak;
  if (explicitEcKey(needsChain ? chain : chainOf(socket.getPeerCertificate(true)))) return EXPLICIT_EC;
  // Node has no name for OpenSSL's "key usage does not include certificate signing", and the chain it
  // shows stops at the certificate such a CA signed (it links issuers with X509_check_issued, which checks
  // the key usage): a chain cut short there, with no "issuer not found" from OpenSSL, is that CA's.
  const cutShort = chain.length === 1 && chain[0].issuerCertificate !== chain[0];
  if ((code === 'UNSPECIFIED' || code === 'KEYUSAGE_NO_CERTSIGN') && (signedWithoutCertSign(chain) || cutShort)) return NO_CERT_SIGN;
  if ((code === 'INVALID_PURPOSE' || code === 'INVALID_CA') && signedByNonCa(chain)) return NOT_A_CA;
  const words = tlsReason(Object.assign(new Error(code), { code }), name, t);
  // tlsReason gives back a code it has no words for as it came.
  return words !== code ? words : (VERIFY_WORDS[code] ?? `certificate not accepted (${code.toLowerCase().replace(/_/g, ' ')})`);
}

const distrusts = (b: PemCertificate) => b.trust === 'rejected';

/** A key with explicit EC parameters in the chain (tls_verify.rs `EXPLICIT_EC`). */
const EXPLICIT_EC = 'certificate not accepted (a certificate of its chain has a public key with explicit EC parameters, which OpenSSL refuses)';

/** A CA whose trust settings keep it from vouching for servers (tls_verify.rs `DISTRUSTED`). */
const DISTRUSTED = 'certificate not trusted (a CA of --cacert/--cacertdir is marked as rejected, or as not trusted, for server authentication: its trust settings, openssl x509 -trustout)';

/** The native engine's words for webpki's EndEntityUsedAsCa (tls.rs `webpki_words`). */
const NOT_A_CA = 'certificate not accepted (a certificate that signed another in the chain is not a CA (CA:FALSE, or no basicConstraints))';

/** OpenSSL verification codes the native engine's words do not cover, in words (the code, lower case, for any other). */
const VERIFY_WORDS: Record<string, string> = {
  CERT_REVOKED: 'certificate revoked',
  CERT_CHAIN_TOO_LONG: 'certificate not accepted (the chain is too long)',
  PATH_LENGTH_EXCEEDED: 'certificate not accepted (a CA signed more levels below it than its pathLenConstraint allows)',
  CA_MD_TOO_WEAK: 'certificate too weak: a certificate of its chain is signed with a digest OpenSSL refuses (SHA-1 or weaker)',
  EE_KEY_TOO_SMALL: "certificate too weak: the server's certificate key is too small",
  CA_KEY_TOO_SMALL: 'certificate too weak: a CA key of its chain is too small',
  INVALID_CA: NOT_A_CA,
  // Only trust settings (a TRUSTED CERTIFICATE of --cacert/--cacertdir) make OpenSSL say these.
  CERT_UNTRUSTED: DISTRUSTED,
  CERT_REJECTED: DISTRUSTED,
};

/** A node:tls handshake error as the user reads it, worded as the native engine words it (tls.rs `tls_reason`). */
function tlsReason(err: NodeJS.ErrnoException, name: string, t: TlsPlan): string {
  const code = err.code ?? '';
  if (['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT'].includes(code)) {
    return NOT_TRUSTED;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `hostname mismatch (the server's certificate is not valid for "${name}"; --sni sets the name checked)`;
  }
  if (code === 'CERT_HAS_EXPIRED') return 'certificate expired';
  if (code === 'CERT_NOT_YET_VALID') return 'certificate not valid yet';
  if (code === 'CERT_SIGNATURE_FAILURE') return "the server's certificate signature does not verify";
  if (code === 'INVALID_PURPOSE') return "the server's certificate is not for server authentication (its extendedKeyUsage)";
  // Bytes that are no TLS record: a RESP reply to the ClientHello; or the probe's verdict.
  if (code === 'RESPBENCH_PLAIN_TEXT' || code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') return PLAIN_TEXT;
  if (code === 'ECONNRESET' || code === 'EPIPE' || /socket disconnected/i.test(err.message)) return closedDuringHandshake(t);
  const alert = alertName(err.message);
  if (alert !== null) return `the server refused the handshake (alert "${alert}": ${alertHint(alert)})`;
  if (['ERR_SSL_NO_CIPHERS_AVAILABLE', 'ERR_SSL_UNSUPPORTED_PROTOCOL', 'ERR_SSL_NO_SHARED_CIPHER', 'ERR_SSL_NO_PROTOCOLS_AVAILABLE'].includes(code)) {
    return 'no TLS version, cipher or signature scheme both sides accept (--tls-ciphers/--tls-ciphersuites)';
  }
  return opensslReason(err.message);
}
