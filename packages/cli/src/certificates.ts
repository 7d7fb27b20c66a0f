/**
 * TLS certificates for servers this machine starts (a study's `tls: true`
 * target, a local cluster, the benchmark script, the tests): a CA, and a
 * certificate for localhost and 127.0.0.1 signed by it, made with openssl in
 * a directory the caller owns (and removes). The certificate is good for
 * serverAuth and clientAuth both, because the nodes of a TLS cluster present
 * it to each other on the cluster bus too.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Certificates {
  dir: string;
  /** The CA that signed `cert` (what a client trusts: --cacert). */
  ca: string;
  cert: string;
  key: string;
  /** A second CA that signed nothing here (for "not trusted" cases), when asked for. */
  otherCa: string | null;
  /** A client certificate signed by `ca` (for servers that ask for one), when asked for. */
  client: { cert: string; key: string } | null;
}

/** openssl is missing or failed: the message says which, in one line. */
export class CertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertificateError';
  }
}

/** Runs openssl in `dir`; a CertificateError names what failed. */
function opensslIn(dir: string): (...args: string[]) => void {
  return (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new CertificateError('openssl not found: the TLS certificate is made with it (install the openssl package)');
    if (r.status !== 0) throw new CertificateError(`openssl ${args[0]} failed while making the TLS certificate: ${(r.stderr ?? '').trim().split('\n').pop()}`);
  };
}

export function makeCertificates(dir: string, options: { otherCa?: boolean; client?: boolean } = {}): Certificates {
  const openssl = opensslIn(dir);
  const cas = options.otherCa ? ['ca', 'other-ca'] : ['ca'];
  for (const ca of cas) openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-days', '2', '-subj', `/CN=respbench ${ca}`);
  writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  if (options.client) writeFileSync(path.join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [who, cn] of [['server', 'localhost'], ...(options.client ? [['client', 'respbench client']] : [])]) {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${cn}`);
    openssl('x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${who}.pem`, '-days', '2', '-extfile', `${who}.ext`);
  }
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    ca: file('ca.pem'),
    cert: file('server.pem'),
    key: file('server.key'),
    otherCa: options.otherCa ? file('other-ca.pem') : null,
    client: options.client ? { cert: file('client.pem'), key: file('client.key') } : null,
  };
}

/** One certificate to issue with {@link issueCertificate}. */
export interface CertificateSpec {
  /** Files NAME.pem and NAME.key in the directory. */
  name: string;
  /** The subject's common name. */
  commonName: string;
  /**
   * Who signs it: the NAME of a certificate issued before in the same
   * directory, or null for a self-signed one (`openssl req -x509`, which
   * makes it CA:TRUE: a CA, or a server certificate that is its own CA).
   */
  issuer: string | null;
  /**
   * Extension lines (`subjectAltName=DNS:localhost`,
   * `basicConstraints=critical,CA:TRUE`, …). None for a signed certificate:
   * X.509 v1, what `openssl x509 -req` makes without -extfile.
   */
  extensions?: string[];
  /** Valid from `from` to `to` days from now (negative: the past); default [0, 2]. */
  validDays?: [number, number];
  /** Its RSA key's bits; default 2048. */
  keyBits?: number;
  /** An EC key on this named curve (P-192, P-256, …) instead of RSA. */
  curve?: string;
  /** The digest its issuer signs with; default sha256. */
  digest?: string;
  /**
   * `openssl genpkey` arguments that make its key (`['-algorithm',
   * 'ED448']`, `['-algorithm', 'RSA-PSS']`, `['-paramfile', 'dsa.param']`),
   * instead of keyBits or curve.
   */
  genpkey?: string[];
  /** `-sigopt` values for its issuer's signature (`rsa_padding_mode:pss`, `rsa_pss_saltlen:20`). */
  signOptions?: string[];
}

/** The time `days` from now in openssl's YYYYMMDDHHMMSSZ. */
function opensslTime(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().replace(/[-:T]/g, '').replace(/\.\d+Z$/, 'Z');
}

/**
 * Makes one certificate and its key in `dir` with openssl, for the
 * certificate situations the TLS tests cover (expired, not yet valid, v1,
 * self-signed, signed by an intermediate, …). A signed certificate goes
 * through `openssl ca`, the only openssl 3.0 command that sets both dates.
 */
export function issueCertificate(dir: string, spec: CertificateSpec): { cert: string; key: string } {
  const openssl = opensslIn(dir);
  const [from, to] = spec.validDays ?? [0, 2];
  const subject = `/CN=${spec.commonName}`;
  const ext = spec.extensions ?? [];
  const newkey = spec.curve ? 'ec' : `rsa:${spec.keyBits ?? 2048}`;
  const keyOptions = spec.curve ? ['-pkeyopt', `ec_paramgen_curve:${spec.curve}`] : [];
  // The key first when genpkey says how; else req makes it.
  if (spec.genpkey) openssl('genpkey', ...spec.genpkey, '-out', `${spec.name}.key`);
  const key = spec.genpkey ? ['-key', `${spec.name}.key`] : ['-newkey', newkey, ...keyOptions, '-nodes', '-keyout', `${spec.name}.key`];
  if (spec.issuer === null) {
    openssl('req', '-x509', '-new', ...key, '-out', `${spec.name}.pem`, '-days', String(Math.max(1, to)), '-subj', subject, ...ext.flatMap((e) => ['-addext', e]));
  } else {
    openssl('req', '-new', ...key, '-out', `${spec.name}.csr`, '-subj', subject);
    // openssl ca keeps a database and a serial; one per certificate, so
    // issuing the same name twice is not refused as a duplicate.
    const db = `${spec.name}.db`;
    writeFileSync(path.join(dir, db), '');
    writeFileSync(path.join(dir, `${spec.name}.serial`), `${Date.now().toString(16).padStart(16, '0')}\n`);
    writeFileSync(
      path.join(dir, `${spec.name}.cnf`),
      ['[ca]', 'default_ca = issuer', '[issuer]', `database = ${db}`, 'new_certs_dir = .', `serial = ${spec.name}.serial`, `default_md = ${spec.digest ?? 'sha256'}`, 'policy = any', 'unique_subject = no', 'copy_extensions = none', '[any]', 'commonName = supplied', ''].join('\n'),
    );
    const extArgs: string[] = [];
    if (ext.length > 0) {
      writeFileSync(path.join(dir, `${spec.name}.ext`), `${ext.join('\n')}\n`);
      extArgs.push('-extfile', `${spec.name}.ext`);
    }
    const sigopts = (spec.signOptions ?? []).flatMap((o) => ['-sigopt', o]);
    openssl('ca', '-batch', '-notext', '-config', `${spec.name}.cnf`, '-cert', `${spec.issuer}.pem`, '-keyfile', `${spec.issuer}.key`, '-in', `${spec.name}.csr`, '-out', `${spec.name}.pem`, '-startdate', opensslTime(from), '-enddate', opensslTime(to), ...sigopts, ...extArgs);
  }
  return { cert: path.join(dir, `${spec.name}.pem`), key: path.join(dir, `${spec.name}.key`) };
}
