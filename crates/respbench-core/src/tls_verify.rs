//! Whether the native engine trusts a server's certificate, and the client
//! certificate it presents: the same verdicts as OpenSSL (redis-cli and the
//! JS engine) where webpki alone would differ. webpki decides every v3
//! certificate a trusted CA signed; around it:
//!
//! - a server certificate byte-equal to one given by `--cacert`/`--cacertdir`
//!   is trusted as it is, as OpenSSL trusts it (what `openssl req -x509`
//!   makes is CA:TRUE, which webpki refuses as a server certificate);
//! - an X.509 v1 certificate (what `openssl x509 -req` makes without
//!   extensions), which webpki does not parse, is checked here: signed by a
//!   certificate of `--cacert`/`--cacertdir`, within its dates, the name
//!   against its common name;
//! - a certificate without subjectAltName is checked against its common name,
//!   as OpenSSL's and Node's host checks do (webpki looks at SANs only);
//! - handshake signatures are checked with the certificate's public key as
//!   this walk reads it, so a v1 certificate (and `--insecure`) works.
//!
//! It runs once per connection (in the handshake) and allocates nothing of
//! its own.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, verify_tls13_signature_with_raw_key, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, SubjectPublicKeyInfoDer, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

use crate::x509::{name_matches, Certificate};

/// The verifier of a run that checks certificates (no `--insecure`).
#[derive(Debug)]
pub(crate) struct ServerVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    /// The certificates of --cacert and --cacertdir, as given.
    trusted: Vec<CertificateDer<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerVerifier {
    pub(crate) fn new(
        webpki: Arc<WebPkiServerVerifier>,
        trusted: Vec<CertificateDer<'static>>,
        algorithms: WebPkiSupportedAlgorithms,
    ) -> ServerVerifier {
        ServerVerifier { webpki, trusted, algorithms }
    }

    /// A certificate webpki cannot take: byte-equal to a trusted one, or v1.
    fn verify_outside_webpki(
        &self,
        cert: &Certificate<'_>,
        der: &CertificateDer<'_>,
        directly_trusted: bool,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let now = now.as_secs() as i64;
        if now < cert.not_before {
            return Err(CertificateError::NotValidYet.into());
        }
        if now > cert.not_after {
            return Err(CertificateError::Expired.into());
        }
        if !directly_trusted && !self.signed_by_trusted(cert) {
            return Err(CertificateError::UnknownIssuer.into());
        }
        if cert.version == 3 && cert.has_subject_alt_name() {
            let parsed = rustls::server::ParsedCertificate::try_from(der)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
        } else if !common_name_matches(cert, server_name) {
            return Err(CertificateError::NotValidForName.into());
        }
        Ok(ServerCertVerified::assertion())
    }

    /// Signed by a certificate of --cacert/--cacertdir whose subject is its issuer.
    fn signed_by_trusted(&self, cert: &Certificate<'_>) -> bool {
        self.trusted.iter().filter_map(|t| Certificate::parse(t.as_ref())).any(|issuer| {
            issuer.subject == cert.issuer
                && self.algorithms.all.iter().any(|alg| {
                    alg.public_key_alg_id().as_ref() == issuer.public_key_algorithm
                        && alg.signature_alg_id().as_ref() == cert.signature_algorithm
                        && alg.verify_signature(issuer.public_key, cert.signed, cert.signature).is_ok()
                })
        })
    }
}

/// The host name against the certificate's common name (an IP address is
/// never checked against a common name, as Node's host check does).
fn common_name_matches(cert: &Certificate<'_>, server_name: &ServerName<'_>) -> bool {
    match (server_name, cert.common_name()) {
        (ServerName::DnsName(host), Some(cn)) => name_matches(cn, host.as_ref()),
        _ => false,
    }
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(cert) = Certificate::parse(end_entity.as_ref()) else {
            return self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        };
        let directly_trusted = self.trusted.iter().any(|t| t.as_ref() == end_entity.as_ref());
        if directly_trusted || cert.version < 3 {
            return self.verify_outside_webpki(&cert, end_entity, directly_trusted, server_name, now);
        }
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
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

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        handshake_signature(message, cert, dss, &self.algorithms, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        handshake_signature(message, cert, dss, &self.algorithms, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
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
    let cert = match Certificate::parse(der.as_ref()) {
        Some(cert) if cert.version < 3 => cert,
        _ if tls13 => return verify_tls13_signature(message, der, dss, algorithms),
        _ => return verify_tls12_signature(message, der, dss, algorithms),
    };
    if tls13 {
        let spki = SubjectPublicKeyInfoDer::from(cert.public_key_info);
        return verify_tls13_signature_with_raw_key(message, &spki, dss, algorithms);
    }
    let candidates = algorithms.mapping.iter().filter(|(scheme, _)| *scheme == dss.scheme).flat_map(|(_, algs)| algs.iter());
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
