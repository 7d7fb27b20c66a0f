//! The rustls client configuration a TLS plan asks for: trusted roots
//! (`--cacert`, `--cacertdir`, the system's), the client certificate
//! (`--cert`/`--key`), the ciphers offered (`--tls-ciphers`,
//! `--tls-ciphersuites`) and `--insecure`. Built once per run and shared by
//! its connections ([`forget_tls_config`] when a run starts).

use std::fs;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::pem::{Purpose, Trust};
use crate::plan::TlsPlan;
use crate::tls_algorithms;
use crate::tls_signing;
use crate::tls_strength::RSA_MIN_CHECKED_BITS;
use crate::tls_verify::{ClientCertificate, ServerVerifier, TrustStore, handshake_signature};
use crate::x509::{Certificate, KeySize, name_hash};

/// The TLS 1.2 suites rustls (ring) has, by the OpenSSL names `--tls-ciphers`
/// takes (as redis-cli's), and the TLS 1.3 ones `--tls-ciphersuites` takes.
/// The CLI checks names against the same lists (validate.ts).
const TLS12_NAMES: &[(&str, &str)] = &[
    ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
];
const TLS13_NAMES: &[(&str, &str)] = &[
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_CHACHA20_POLY1305_SHA256", "TLS13_CHACHA20_POLY1305_SHA256"),
];

/// One config per TLS settings, shared by a run's connections: loading the
/// system's roots is not done per connection. A new run builds it anew
/// ([`forget_tls_config`]), so a certificate file changed between runs counts.
static TLS_CONFIG: Mutex<Option<(TlsPlan, Arc<ClientConfig>)>> = Mutex::new(None);

/// Drops the cached TLS config (and the run's plain-text probe); called
/// when a run starts.
pub fn forget_tls_config() {
    *TLS_CONFIG.lock().unwrap_or_else(|e| e.into_inner()) = None;
    crate::tls_probe::forget_probe();
}

pub(crate) fn tls_config(tls: &TlsPlan) -> Result<Arc<ClientConfig>, String> {
    let mut cache = TLS_CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((key, config)) = cache.as_ref() {
        if key == tls {
            return Ok(config.clone());
        }
    }
    let config = Arc::new(build_tls_config(tls)?);
    *cache = Some((tls.clone(), config.clone()));
    Ok(config)
}

fn pick_suites(
    all: &[rustls::SupportedCipherSuite],
    list: Option<&str>,
    names: &[(&str, &str)],
    flag: &str,
    tls13: bool,
) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    let of_version = |s: &rustls::SupportedCipherSuite| matches!(s, rustls::SupportedCipherSuite::Tls13(_)) == tls13;
    let Some(list) = list else {
        return Ok(all.iter().filter(|s| of_version(s)).copied().collect());
    };
    let mut out = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let Some((_, rustls_name)) = names.iter().find(|(n, _)| *n == name) else {
            return Err(format!("{flag}: the native engine's TLS library does not have the cipher \"{name}\""));
        };
        if let Some(s) = all.iter().find(|s| s.suite().as_str() == Some(rustls_name)) {
            out.push(*s);
        }
    }
    Ok(out)
}

fn build_tls_config(tls: &TlsPlan) -> Result<ClientConfig, String> {
    let base = rustls::crypto::ring::default_provider();
    let mut suites =
        pick_suites(&base.cipher_suites, tls.ciphersuites.as_deref(), TLS13_NAMES, "--tls-ciphersuites", true)?;
    suites.extend(pick_suites(&base.cipher_suites, tls.ciphers.as_deref(), TLS12_NAMES, "--tls-ciphers", false)?);
    if suites.is_empty() {
        return Err("TLS: --tls-ciphers/--tls-ciphersuites leave no cipher to offer".into());
    }
    // ring's groups, then P-521 (tls_kx.rs), never the first offered.
    let mut kx_groups = base.kx_groups.clone();
    kx_groups.push(crate::tls_kx::SECP521R1);
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        kx_groups,
        signature_verification_algorithms: tls_algorithms::SUPPORTED,
        ..base
    });
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider.signature_verification_algorithms)))
    } else {
        let verifier = ServerVerifier::new(root_store(tls)?);
        builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier))
    };
    let config = match (tls.cert.as_deref(), tls.key.as_deref()) {
        (Some(cert), Some(key)) => {
            builder.with_client_cert_resolver(Arc::new(client_certificate(cert, key, &provider)?))
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("--cert and --key go together".into()),
    };
    Ok(config)
}

/// `--cert`/`--key`: the key must be the certificate's (the CLI checks it
/// first, with the same words).
fn client_certificate(cert: &str, key: &str, provider: &CryptoProvider) -> Result<ClientCertificate, String> {
    let certs: Vec<CertificateDer<'static>> =
        read_certs(cert, "--cert", Purpose::Chain)?.into_iter().map(|(c, _)| c).collect();
    let Some(first) = certs.first() else {
        return Err(format!("--cert {cert}: no PEM certificate in it"));
    };
    let Some(parsed) = Certificate::parse(first.as_ref()) else {
        return Err(format!("--cert {cert}: its first certificate cannot be parsed"));
    };
    // A UTF-8 byte order mark before the key, as OpenSSL's PEM reader skips it.
    let text = fs::read(key).map_err(|e| format!("--key {key}: cannot read it ({e})"))?;
    let key_der = PrivateKeyDer::from_pem_slice(text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&text))
        .map_err(|_| format!("--key {key}: no PEM private key in it"))?;
    let mismatch = || format!("--key {key} is not the private key of the certificate in --cert {cert}");
    let signing: Arc<dyn rustls::sign::SigningKey> = match provider.key_provider.load_private_key(key_der.clone_key()) {
        Ok(signing) => {
            if signing.public_key().is_some_and(|spki| spki.as_ref() != parsed.public_key_info) {
                return Err(mismatch());
            }
            signing
        }
        // What ring will not sign with (RSA under 2048 bits, RSA-PSS, P-521, Ed448): tls_signing.rs.
        Err(_) => {
            let pure = tls_signing::load(&key_der).ok_or_else(|| format!("--key: \"{key}\" holds a private key of a kind the native engine does not sign with (it signs with RSA, RSA-PSS, P-256, P-384, P-521, Ed25519 and Ed448 keys): the JS engine (OpenSSL) may: --engine js"))?;
            if !pure.matches(parsed.public_key_algorithm, parsed.public_key) {
                return Err(mismatch());
            }
            Arc::new(pure)
        }
    };
    Ok(ClientCertificate(Arc::new(CertifiedKey::new(certs, signing))))
}

/// The certificates of a PEM file, under each label OpenSSL reads for the purpose (pem.rs).
fn read_certs(path: &str, flag: &str, purpose: Purpose) -> Result<Vec<(CertificateDer<'static>, Trust)>, String> {
    let text = fs::read(path).map_err(|e| format!("{flag} {path}: cannot read it ({e})"))?;
    let certs = crate::pem::certificates(&text, purpose)
        .map_err(|_| format!("{flag} {path}: not a PEM certificate file (a PEM block is malformed)"))?;
    Ok(certs.into_iter().map(|c| (CertificateDer::from(c.der), c.trust)).collect())
}

/// How OpenSSL names a certificate in a CA folder (`openssl rehash`): its
/// subject's hash in 8 lowercase hex digits, a dot, a number without
/// leading zeros (`%08lx.%d`); the hash and the number. Paired with
/// packages/cli/src/ca-folder.ts.
fn hashed_name(name: &str) -> Option<(u32, u32)> {
    let (hash, n) = name.split_once('.')?;
    let lower_hex = hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let number = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    if !lower_hex || !number {
        return None;
    }
    Some((u32::from_str_radix(hash, 16).ok()?, n.parse().ok()?))
}

/// The system's roots plus --cacert and the PEM certificates of --cacertdir's HASH.N files.
fn root_store(tls: &TlsPlan) -> Result<TrustStore, String> {
    let mut store = TrustStore::empty();
    let native = rustls_native_certs::load_native_certs();
    store.roots.add_parsable_certificates(native.certs);
    if let Some(path) = tls.cacert.as_deref() {
        let certs = read_certs(path, "--cacert", Purpose::CaFile)?;
        if certs.is_empty() {
            return Err(format!("--cacert {path}: no PEM certificate in it"));
        }
        for (cert, trust) in certs {
            store.add(cert, trust).map_err(|_| format!("--cacert {path}: a certificate in it cannot be parsed"))?;
        }
    }
    // OpenSSL takes a ':'-separated list of folders (its LIST_SEPARATOR_CHAR).
    for dir in tls.cacertdir.as_deref().into_iter().flat_map(|dirs| dirs.split(':')).filter(|d| !d.is_empty()) {
        // A folder of the list that does not exist is skipped, as OpenSSL skips it.
        let entries = match fs::read_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            entries => entries.map_err(|e| format!("--cacertdir {dir}: cannot read it ({e})"))?,
        };
        let names: std::collections::HashSet<String> =
            entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect();
        for name in &names {
            // Only what OpenSSL (redis-cli) would find there: HASH.N, with
            // HASH.0 … HASH.N-1 there too (it stops at the first missing),
            // holding a certificate whose subject's hash is HASH.
            let Some((hash, n)) = hashed_name(name) else { continue };
            if !(0..n).all(|k| names.contains(&format!("{hash:08x}.{k}"))) {
                continue;
            }
            let path = std::path::Path::new(dir).join(name);
            let Ok(certs) = read_certs(&path.to_string_lossy(), "--cacertdir", Purpose::CaFolder) else { continue };
            // OpenSSL reads the file when it looks that hash up, and then keeps every certificate in it.
            if certs
                .iter()
                .any(|(c, _)| Certificate::parse(c.as_ref()).and_then(|c| name_hash(c.subject)) == Some(hash))
            {
                for (cert, trust) in certs {
                    // A certificate that does not parse is skipped, as the JS engine skips it.
                    let _ = store.add(cert, trust);
                }
            }
        }
    }
    Ok(store)
}

/// `--insecure`: accepts any server certificate (the handshake signatures
/// are still checked, so the session keys are the server's; a v1
/// certificate's too), but for an RSA key under 1024 bits, which no check
/// here takes: its handshake signature is then not checked at all; under
/// --insecure nothing is proven about the server anyway.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl NoVerification {
    fn signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
        tls13: bool,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        handshake_signature(message, cert, dss, &self.0, tls13).or_else(|e| {
            let weak = Certificate::parse(cert.as_ref())
                .and_then(|c| c.key_size())
                .is_some_and(|key| matches!(key, KeySize::Rsa(n) if n < RSA_MIN_CHECKED_BITS));
            if weak { Ok(HandshakeSignatureValid::assertion()) } else { Err(e) }
        })
    }
}

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cipher_name_is_one_rustls_has() {
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        for (_, name) in TLS12_NAMES.iter().chain(TLS13_NAMES) {
            assert!(all.iter().any(|s| s.suite().as_str() == Some(name)), "{name}");
        }
    }

    #[test]
    fn a_ca_folder_is_read_by_openssl_names() {
        assert_eq!(hashed_name("fb2c8394.0"), Some((0xfb2c8394, 0)));
        assert_eq!(hashed_name("0000000a.12"), Some((0xa, 12)));
        for name in ["ca.pem", "FB2C8394.0", "fb2c839.0", "fb2c8394.", "fb2c8394.r0", "fb2c8394.0.pem", "fb2c8394.01"] {
            assert_eq!(hashed_name(name), None, "{name}");
        }
    }

    #[test]
    fn an_unknown_cipher_is_named() {
        let tls = TlsPlan { ciphers: Some("RC4-MD5".into()), ..TlsPlan::default() };
        let e = build_tls_config(&tls).unwrap_err();
        assert!(e.contains("--tls-ciphers") && e.contains("RC4-MD5"), "{e}");
    }
}
