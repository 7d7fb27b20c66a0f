//! Whether the native engine trusts a server's certificate, and the client
//! certificate it presents: the same verdicts as OpenSSL (redis-cli and the
//! JS engine) where webpki alone would differ. webpki decides every v3
//! certificate a trusted CA signed; around it:
//!
//! - only self-signed certificates of `--cacert`/`--cacertdir` are trust
//!   anchors, the others links a chain may go through (OpenSSL's rule;
//!   webpki takes any certificate it is given as an anchor);
//! - a server certificate byte-equal to a self-signed one of
//!   `--cacert`/`--cacertdir` is trusted as it is, as OpenSSL trusts it
//!   (what `openssl req -x509` makes is CA:TRUE, which webpki refuses as a
//!   server certificate);
//! - an X.509 v1 certificate (what `openssl x509 -req` makes without
//!   extensions), which webpki does not parse, is checked here: chained to a
//!   trusted root (directly or through CA certificates the server sent),
//!   within its dates, the name against its common name;
//! - a certificate without subjectAltName is checked against its common name,
//!   as OpenSSL's and Node's host checks do (webpki looks at SANs only);
//! - handshake signatures are checked with the certificate's public key as
//!   this walk reads it, so a v1 certificate (and `--insecure`) works.
//!
//! It runs once per connection (in the handshake), never per request.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{
    WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature, verify_tls13_signature_with_raw_key,
};
use rustls::pki_types::{
    CertificateDer, ServerName, SignatureVerificationAlgorithm, SubjectPublicKeyInfoDer, UnixTime,
};
use rustls::server::ParsedCertificate;
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

use crate::pem::Trust;
use crate::tls_algorithms::{self, for_chain, signed_by};
use crate::tls_strength::{NOT_A_CA, Refused, too_weak};
use crate::x509::{Certificate, name_matches, public_key_parts};

/// The signature algorithms one chain is checked with (tls_algorithms.rs).
type Algorithms = [&'static dyn SignatureVerificationAlgorithm];

/// What --cacert and --cacertdir (and the system) give verification: the
/// self-signed certificates are trust anchors, the others only help build
/// a chain, as OpenSSL takes a CA file (a chain must end at a self-signed
/// root; webpki alone would take any certificate as an anchor); a TRUSTED
/// CERTIFICATE's settings change that as OpenSSL's do (pem.rs `Trust`).
pub(crate) struct TrustStore {
    pub roots: RootCertStore,
    /// The anchors of --cacert/--cacertdir, as given: the self-signed, and
    /// those whose trust settings trust them for servers.
    pub self_signed: Vec<CertificateDer<'static>>,
    /// The other certificates of --cacert/--cacertdir.
    pub intermediates: Vec<CertificateDer<'static>>,
    /// Those whose trust settings reject servers (pem.rs `Trust::Rejected`): a chain through one is refused.
    pub distrusted: Vec<CertificateDer<'static>>,
}

impl TrustStore {
    pub(crate) fn empty() -> TrustStore {
        TrustStore {
            roots: RootCertStore::empty(),
            self_signed: Vec::new(),
            intermediates: Vec::new(),
            distrusted: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, cert: CertificateDer<'static>, trust: Trust) -> Result<(), ()> {
        let self_issued = Certificate::parse(cert.as_ref()).ok_or(())?.is_self_issued();
        let anchor = match trust {
            Trust::Default => self_issued,
            Trust::Trusted => true,
            Trust::Rejected => {
                self.distrusted.push(cert);
                return Ok(());
            }
        };
        if anchor {
            self.roots.add(cert.clone()).map_err(|_| ())?;
            self.self_signed.push(cert);
        } else {
            self.intermediates.push(cert);
        }
        Ok(())
    }
}

/// A certificate whose key has explicit EC parameters (OpenSSL: "Certificate
/// public key has explicit ECC parameters"); the JS engine's words too.
pub(crate) const EXPLICIT_EC: &str = "certificate not accepted (a certificate of its chain has a public key with explicit EC parameters, which OpenSSL refuses)";

/// A chain that would have reached a CA of --cacert/--cacertdir whose trust
/// settings keep it from vouching for servers (OpenSSL: "certificate
/// rejected", "certificate not trusted"; the JS engine's words too).
pub(crate) const DISTRUSTED: &str = "certificate not trusted (a CA of --cacert/--cacertdir is marked as rejected, or as not trusted, for server authentication: its trust settings, openssl x509 -trustout)";

/// The verifier of a run that checks certificates (no `--insecure`).
#[derive(Debug)]
pub(crate) struct ServerVerifier {
    /// The trust anchors (the system's roots, the self-signed certificates
    /// of --cacert/--cacertdir), those certificates as given, and the other
    /// certificates of --cacert/--cacertdir (links of a chain, not anchors).
    roots: Arc<RootCertStore>,
    self_signed: Vec<CertificateDer<'static>>,
    store_intermediates: Vec<CertificateDer<'static>>,
    distrusted: Vec<CertificateDer<'static>>,
}

impl ServerVerifier {
    pub(crate) fn new(store: TrustStore) -> ServerVerifier {
        ServerVerifier {
            roots: Arc::new(store.roots),
            self_signed: store.self_signed,
            store_intermediates: store.intermediates,
            distrusted: store.distrusted,
        }
    }

    /// Whether the chain goes through a CA the store distrusts: a certificate
    /// the server sent is one, or was issued by one (OpenSSL looks an
    /// issuer up in its trusted store first, so the store's copy, with its
    /// settings, is the one the chain takes).
    fn through_distrusted(&self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>]) -> bool {
        let distrusted: Vec<Certificate<'_>> =
            self.distrusted.iter().filter_map(|d| Certificate::parse(d.as_ref())).collect();
        std::iter::once(end_entity).chain(intermediates).filter_map(|der| Certificate::parse(der.as_ref())).any(|c| {
            distrusted.iter().any(|d| d.subject == c.issuer || (d.subject == c.subject && d.public_key == c.public_key))
        })
    }

    /// The algorithms a chain the server sent may be checked with: those
    /// its certificates and the store's need.
    fn algorithms_for(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
    ) -> Vec<&'static dyn SignatureVerificationAlgorithm> {
        let all =
            std::iter::once(end_entity).chain(intermediates).chain(&self.self_signed).chain(&self.store_intermediates);
        for_chain(all.filter_map(|der| Certificate::parse(der.as_ref())))
    }

    /// A certificate webpki cannot take: byte-equal to a trusted one, or v1.
    fn verify_outside_webpki(
        &self,
        cert: &Certificate<'_>,
        der: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        directly_trusted: bool,
        server_name: &ServerName<'_>,
        now: UnixTime,
        algorithms: &Algorithms,
    ) -> Result<ServerCertVerified, Error> {
        let now = now.as_secs() as i64;
        if now < cert.not_before {
            return Err(CertificateError::NotValidYet.into());
        }
        if now > cert.not_after {
            return Err(CertificateError::Expired.into());
        }
        if !directly_trusted && !self.chains_to_anchor(cert, intermediates, now, 0, algorithms) {
            // Signed by a certificate the server sent that may not sign (a v1 one not self-signed, CA:FALSE): OpenSSL's "invalid CA".
            let by_non_ca = intermediates.iter().filter_map(|der| Certificate::parse(der.as_ref())).any(|issuer| {
                issuer.subject == cert.issuer
                    && !issuer.is_ca()
                    && signed_by(cert, issuer.public_key_algorithm, issuer.public_key, algorithms)
            });
            return Err(if by_non_ca {
                CertificateError::Other(rustls::OtherError(Arc::new(Refused(NOT_A_CA.into())))).into()
            } else {
                CertificateError::UnknownIssuer.into()
            });
        }
        if cert.version == 3 && cert.has_subject_alt_name() {
            let parsed = rustls::server::ParsedCertificate::try_from(der)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
        } else if !common_name_matches(cert, server_name) {
            return Err(CertificateError::NotValidForName.into());
        }
        Ok(ServerCertVerified::assertion())
    }

    /// Whether `cert` chains to a trust anchor: signed by one (a root of the
    /// system's or of --cacert/--cacertdir), or by a CA certificate among
    /// those the server sent that does, within its dates. What webpki does
    /// for v3 chains, for a chain whose leaf is v1.
    fn chains_to_anchor(
        &self,
        cert: &Certificate<'_>,
        intermediates: &[CertificateDer<'_>],
        now: i64,
        depth: usize,
        algorithms: &Algorithms,
    ) -> bool {
        let signed_by = |algorithm: &[u8], key: &[u8]| signed_by(cert, algorithm, key, algorithms);
        let by_anchor = self.roots.roots.iter().any(|anchor| {
            anchor.subject.as_ref() == cert.issuer
                && public_key_parts(anchor.subject_public_key_info.as_ref())
                    .is_some_and(|(alg, key)| signed_by(alg, key))
        });
        if by_anchor {
            return true;
        }
        depth < MAX_INTERMEDIATES
            && intermediates
                .iter()
                .chain(&self.store_intermediates)
                .filter_map(|der| Certificate::parse(der.as_ref()))
                .any(|issuer| {
                    issuer.subject == cert.issuer
                        && issuer.is_ca()
                        && (issuer.not_before..=issuer.not_after).contains(&now)
                        && signed_by(issuer.public_key_algorithm, issuer.public_key)
                        && self.chains_to_anchor(&issuer, intermediates, now, depth + 1, algorithms)
                })
    }
}

/// Intermediates walked above a v1 leaf (webpki's own limit is larger;
/// real chains have one or two).
const MAX_INTERMEDIATES: usize = 4;

/// The host name against the certificate's common name (an IP address is
/// never checked against a common name, as Node's host check does).
fn common_name_matches(cert: &Certificate<'_>, server_name: &ServerName<'_>) -> bool {
    match (server_name, cert.common_name()) {
        (ServerName::DnsName(host), Some(cn)) => name_matches(cn, host.as_ref()),
        _ => false,
    }
}

impl ServerVerifier {
    /// The chain's verdict: webpki's, or for what webpki does not read
    /// (v1, a --cacert certificate itself) this file's own.
    fn verify_chain(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        now: UnixTime,
        algorithms: &Algorithms,
    ) -> Result<ServerCertVerified, Error> {
        // No anchor at all (no system roots, --cacert without a root):
        // every chain is then "not trusted", as OpenSSL says.
        if self.roots.is_empty() {
            return Err(CertificateError::UnknownIssuer.into());
        }
        let webpki = |intermediates: &[CertificateDer<'_>]| {
            let parsed = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(&parsed, &self.roots, intermediates, now, algorithms)?;
            verify_server_name(&parsed, server_name).map(|_| ServerCertVerified::assertion())
        };
        let Some(cert) = Certificate::parse(end_entity.as_ref()) else {
            return webpki(intermediates);
        };
        let directly_trusted = self.self_signed.iter().any(|t| t.as_ref() == end_entity.as_ref());
        if directly_trusted || cert.version < 3 {
            return self.verify_outside_webpki(
                &cert,
                end_entity,
                intermediates,
                directly_trusted,
                server_name,
                now,
                algorithms,
            );
        }
        // The chain may go through certificates of --cacert that are not
        // anchors (once per connection: this Vec is not per request).
        let with_store: Vec<CertificateDer<'_>>;
        let intermediates = if self.store_intermediates.is_empty() {
            intermediates
        } else {
            with_store = intermediates.iter().chain(&self.store_intermediates).cloned().collect();
            &with_store
        };
        match webpki(intermediates) {
            // The chain verified (webpki checks the name last); without a
            // subjectAltName the common name is the name.
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !cert.has_subject_alt_name() && common_name_matches(&cert, server_name) => {
                Ok(ServerCertVerified::assertion())
            }
            verdict => verdict,
        }
    }
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let algorithms = self.algorithms_for(end_entity, intermediates);
        let verdict = self.verify_chain(end_entity, intermediates, server_name, now, &algorithms);
        let checked = matches!(
            verdict,
            Ok(_)
                | Err(Error::InvalidCertificate(
                    CertificateError::BadSignature
                        | CertificateError::UnsupportedSignatureAlgorithmContext { .. }
                        | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. }
                ))
        );
        // A key with explicit EC parameters anywhere the server sent: OpenSSL refuses it (level 2 and up).
        if std::iter::once(end_entity).chain(intermediates).any(|der| {
            Certificate::parse(der.as_ref())
                .is_some_and(|c| crate::x509::explicit_ec_parameters(c.public_key_algorithm))
        }) {
            return Err(CertificateError::Other(rustls::OtherError(Arc::new(Refused(EXPLICIT_EC.into())))).into());
        }
        if !self.distrusted.is_empty() && self.through_distrusted(end_entity, intermediates) {
            return Err(CertificateError::Other(rustls::OtherError(Arc::new(Refused(DISTRUSTED.into())))).into());
        }
        let weak = || too_weak(end_entity, intermediates, &self.self_signed, &self.store_intermediates, &algorithms);
        match checked.then(weak).flatten() {
            Some(why) => Err(CertificateError::Other(rustls::OtherError(Arc::new(why))).into()),
            None => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        handshake_signature(message, cert, dss, &tls_algorithms::SUPPORTED, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        handshake_signature(message, cert, dss, &tls_algorithms::SUPPORTED, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        tls_algorithms::SUPPORTED.supported_schemes()
    }
}

/// The server's handshake signature checked with its certificate's key:
/// rustls's own check for v3 certificates, the key read here for v1 ones
/// (which rustls's check would refuse to parse).
pub(crate) fn handshake_signature(
    message: &[u8],
    der: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    // The handshake's signature, not a certificate's, in the words.
    handshake_signature_check(message, der, dss, algorithms, tls13).map_err(|e| match e {
        Error::InvalidCertificate(CertificateError::BadSignature) => {
            CertificateError::Other(rustls::OtherError(Arc::new(Refused(HANDSHAKE_SIGNATURE.into())))).into()
        }
        other => other,
    })
}

/// The server's handshake signature does not verify with its certificate's key.
const HANDSHAKE_SIGNATURE: &str = "the server's handshake signature does not verify with its certificate's key";

fn handshake_signature_check(
    message: &[u8],
    der: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    // TLS 1.3's schemes for RSA-PSS keys, which rustls has no name for.
    if let Some(hash) = tls_algorithms::pss_key_scheme(dss.scheme) {
        let valid = Certificate::parse(der.as_ref()).is_some_and(|cert| {
            tls_algorithms::is_pss_key(cert.public_key_algorithm)
                && tls_algorithms::pss_key_handshake(
                    hash,
                    cert.public_key_algorithm,
                    cert.public_key,
                    message,
                    dss.signature(),
                )
        });
        return if valid {
            Ok(HandshakeSignatureValid::assertion())
        } else {
            Err(CertificateError::BadSignature.into())
        };
    }
    let cert = match Certificate::parse(der.as_ref()) {
        Some(cert) if cert.version < 3 => cert,
        _ if tls13 => return verify_tls13_signature(message, der, dss, algorithms),
        _ => return verify_tls12_signature(message, der, dss, algorithms),
    };
    if tls13 {
        let spki = SubjectPublicKeyInfoDer::from(cert.public_key_info);
        return verify_tls13_signature_with_raw_key(message, &spki, dss, algorithms);
    }
    let candidates =
        algorithms.mapping.iter().filter(|(scheme, _)| *scheme == dss.scheme).flat_map(|(_, algs)| algs.iter());
    for alg in candidates {
        if alg.public_key_alg_id().as_ref() == cert.public_key_algorithm
            && alg.verify_signature(cert.public_key, message, dss.signature()).is_ok()
        {
            return Ok(HandshakeSignatureValid::assertion());
        }
    }
    Err(CertificateError::BadSignature.into())
}

/// The one client certificate of `--cert`/`--key`, given whatever the
/// server asks. Unlike rustls's own (`with_client_auth_cert`), it does not
/// parse the certificate with webpki, so an X.509 v1 client certificate,
/// which OpenSSL servers (redis-server) accept, is presented as it is; the
/// key is matched to the certificate when the config is built.
#[derive(Debug)]
pub(crate) struct ClientCertificate(pub Arc<CertifiedKey>);

impl ResolvesClientCert for ClientCertificate {
    fn resolve(&self, _root_hint_subjects: &[&[u8]], _sigschemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "../tests/openssl/mod.rs"]
mod openssl_for_tests;

#[cfg(test)]
mod tests {
    //! The verifier against certificates made here with openssl (skipped
    //! when it is missing), without a server: what the e2e table
    //! (test/tls-verdicts.test.ts) checks through both engines, pinned at
    //! the verifier itself, including dates no server is needed for.

    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use rustls::pki_types::pem::PemObject;

    use super::openssl_for_tests::openssl;
    use super::*;

    /// A CA, a v1 leaf it signs, a self-signed CA:TRUE server certificate,
    /// an intermediate CA and a v1 leaf under it; None without openssl.
    fn certificates() -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("respbench-tls-verify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let root = |name: &str, cn: &str, ext: &[&str]| {
            let subject = format!("/CN={cn}");
            let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
            let mut args = vec!["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &pem];
            args.extend(["-days", "2", "-subj", &subject]);
            for e in ext {
                args.extend(["-addext", e]);
            }
            openssl(&dir, &args)
        };
        let signed = |name: &str, cn: &str, issuer: &str, ext: Option<&str>| {
            let subject = format!("/CN={cn}");
            let (key, csr, pem) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
            let (ca, ca_key) = (format!("{issuer}.pem"), format!("{issuer}.key"));
            let mut args = vec!["x509", "-req", "-in", &csr, "-CA", &ca, "-CAkey", &ca_key, "-CAcreateserial"];
            args.extend(["-out", &pem, "-days", "2"]);
            let ext_file = format!("{name}.ext");
            if let Some(ext) = ext {
                std::fs::write(dir.join(&ext_file), ext).is_ok().then_some(())?;
                args.extend(["-extfile", &ext_file]);
            }
            (openssl(&dir, &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", &subject])
                && openssl(&dir, &args))
            .then_some(())
        };
        let made = root("ca", "test ca", &[])
            && root("self", "localhost", &["subjectAltName=DNS:localhost,IP:127.0.0.1"])
            && signed("v1", "localhost", "ca", None).is_some()
            && signed("intermediate", "test intermediate", "ca", Some("basicConstraints=critical,CA:TRUE\n")).is_some()
            && signed("v1-leaf", "localhost", "intermediate", None).is_some();
        made.then_some(dir)
    }

    fn cert(dir: &Path, name: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_file(dir.join(format!("{name}.pem"))).unwrap()
    }

    fn verifier(trusted: &[CertificateDer<'static>]) -> ServerVerifier {
        let mut store = TrustStore::empty();
        for c in trusted {
            store.add(c.clone(), Trust::Default).unwrap();
        }
        ServerVerifier::new(store)
    }

    fn verdict(
        v: &ServerVerifier,
        leaf: &CertificateDer<'_>,
        chain: &[CertificateDer<'_>],
        name: &str,
        now: UnixTime,
    ) -> Result<(), Error> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        v.verify_server_cert(leaf, chain, &name, &[], now).map(|_| ())
    }

    #[test]
    fn trusts_what_openssl_trusts_and_no_more() {
        let Some(dir) = certificates() else {
            eprintln!("skipped: openssl did not make the certificates");
            return;
        };
        let now = UnixTime::now();
        let (ca, me, v1, inter, v1_leaf) =
            (cert(&dir, "ca"), cert(&dir, "self"), cert(&dir, "v1"), cert(&dir, "intermediate"), cert(&dir, "v1-leaf"));
        let by_ca = verifier(std::slice::from_ref(&ca));
        let invalid = |c: CertificateError| Err(Error::InvalidCertificate(c));

        // A self-signed CA:TRUE server certificate given as the CA.
        assert_eq!(verdict(&verifier(std::slice::from_ref(&me)), &me, &[], "localhost", now), Ok(()));
        assert_eq!(verdict(&verifier(std::slice::from_ref(&me)), &me, &[], "127.0.0.1", now), Ok(()));
        let elsewhere = verdict(&verifier(std::slice::from_ref(&me)), &me, &[], "elsewhere.test", now);
        assert!(
            matches!(elsewhere, Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }))),
            "{elsewhere:?}"
        );
        // v1, its name the common name (never an IP address).
        assert_eq!(verdict(&by_ca, &v1, &[], "localhost", now), Ok(()));
        assert_eq!(verdict(&by_ca, &v1, &[], "127.0.0.1", now), invalid(CertificateError::NotValidForName));
        assert_eq!(
            verdict(&verifier(std::slice::from_ref(&me)), &v1, &[], "localhost", now),
            invalid(CertificateError::UnknownIssuer)
        );
        // v1 under an intermediate: sent by the server, or held by
        // --cacert beside the root; the intermediate alone is no anchor.
        assert_eq!(verdict(&by_ca, &v1_leaf, std::slice::from_ref(&inter), "localhost", now), Ok(()));
        assert_eq!(verdict(&by_ca, &v1_leaf, &[], "localhost", now), invalid(CertificateError::UnknownIssuer));
        assert_eq!(verdict(&verifier(&[ca.clone(), inter.clone()]), &v1_leaf, &[], "localhost", now), Ok(()));
        assert_eq!(
            verdict(&verifier(std::slice::from_ref(&inter)), &v1_leaf, std::slice::from_ref(&inter), "localhost", now),
            invalid(CertificateError::UnknownIssuer)
        );
        // Dates, on the paths webpki does not take.
        let later = UnixTime::since_unix_epoch(Duration::from_secs(now.as_secs() + 10 * 86_400));
        let earlier = UnixTime::since_unix_epoch(Duration::from_secs(now.as_secs() - 86_400));
        assert_eq!(verdict(&by_ca, &v1, &[], "localhost", later), invalid(CertificateError::Expired));
        assert_eq!(
            verdict(&verifier(std::slice::from_ref(&me)), &me, &[], "localhost", earlier),
            invalid(CertificateError::NotValidYet)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
