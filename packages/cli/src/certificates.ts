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

export function makeCertificates(dir: string, options: { otherCa?: boolean; client?: boolean } = {}): Certificates {
  const openssl = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new CertificateError('openssl not found: the TLS certificate is made with it (install the openssl package)');
    if (r.status !== 0) throw new CertificateError(`openssl ${args[0]} failed while making the TLS certificate: ${(r.stderr ?? '').trim().split('\n').pop()}`);
  };
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
