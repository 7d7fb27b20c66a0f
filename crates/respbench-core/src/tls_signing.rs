//! Client keys (`--key`) ring will not sign with and OpenSSL (redis-cli,
//! redis-server) takes: RSA keys under 2048 bits, RSA-PSS keys, P-521 and
//! Ed448 keys, signed with in pure Rust (RustCrypto). ring's own key
//! provider is asked first (tls_config.rs); these are what it refused. Each
//! signs one handshake message per connection.

use std::sync::Arc;

use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::{Pkcs1v15Sign, PrivateKey as RsaPrivateKey};
use rustls::pki_types::PrivateKeyDer;
use rustls::sign::{Signer, SigningKey};
use rustls::{SignatureAlgorithm, SignatureScheme};
use sha2::Digest;
use signature::hazmat::PrehashSigner;

use crate::der::{INTEGER, OCTET_STRING, OID, SEQUENCE, expect, next};
use crate::tls_algorithms::{RSA_PSS_PSS_SHA256, RSA_PSS_PSS_SHA384, RSA_PSS_PSS_SHA512};
use crate::tls_crypto::{self, Hash, Pss};

const OID_RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_RSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P521: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];
const OID_ED448: &[u8] = &[0x2b, 0x65, 0x71];

/// A key of the kinds above.
#[derive(Debug)]
enum Key {
    /// `pss_only`: an RSA-PSS key (id-RSASSA-PSS), which signs only with
    /// RSA-PSS-key schemes, and only with the digest its parameters name
    /// (`restricted`: that digest and the least salt), as OpenSSL holds it to.
    Rsa {
        key: RsaPrivateKey,
        pss_only: bool,
        restricted: Option<Pss>,
    },
    /// P-256 and P-384 keys ring did not load: written with explicit curve parameters.
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
    P521(p521::ecdsa::SigningKey),
    Ed448(Box<ed448_goldilocks::SigningKey>),
}

/// A client key ring refused, as rustls signs with it.
#[derive(Debug, Clone)]
pub(crate) struct PureKey(Arc<Key>);

/// What a key signs with, in the order it prefers (TLS 1.3's first; rustls
/// leaves out what the version does not allow).
fn schemes(key: &Key) -> &'static [SignatureScheme] {
    match key {
        Key::Rsa { pss_only: true, .. } => &[RSA_PSS_PSS_SHA256, RSA_PSS_PSS_SHA384, RSA_PSS_PSS_SHA512],
        Key::Rsa { pss_only: false, .. } => &[
            SignatureScheme::RSA_PSS_SHA256,
            SignatureScheme::RSA_PSS_SHA384,
            SignatureScheme::RSA_PSS_SHA512,
            SignatureScheme::RSA_PKCS1_SHA256,
            SignatureScheme::RSA_PKCS1_SHA384,
            SignatureScheme::RSA_PKCS1_SHA512,
        ],
        Key::P256(_) => &[SignatureScheme::ECDSA_NISTP256_SHA256],
        Key::P384(_) => &[SignatureScheme::ECDSA_NISTP384_SHA384],
        Key::P521(_) => &[SignatureScheme::ECDSA_NISTP521_SHA512],
        Key::Ed448(_) => &[SignatureScheme::ED448],
    }
}

fn hash_of(scheme: SignatureScheme) -> Hash {
    match scheme {
        SignatureScheme::RSA_PSS_SHA384
        | SignatureScheme::RSA_PKCS1_SHA384
        | SignatureScheme::ECDSA_NISTP384_SHA384
        | RSA_PSS_PSS_SHA384 => Hash::Sha384,
        SignatureScheme::RSA_PSS_SHA512
        | SignatureScheme::RSA_PKCS1_SHA512
        | SignatureScheme::ECDSA_NISTP521_SHA512
        | RSA_PSS_PSS_SHA512 => Hash::Sha512,
        _ => Hash::Sha256,
    }
}

fn is_pss(scheme: SignatureScheme) -> bool {
    matches!(
        scheme,
        SignatureScheme::RSA_PSS_SHA256 | SignatureScheme::RSA_PSS_SHA384 | SignatureScheme::RSA_PSS_SHA512
    ) || crate::tls_algorithms::pss_key_scheme(scheme).is_some()
}

impl Key {
    /// The RSA-PSS parameters a TLS scheme signs with: the scheme's digest,
    /// a salt of its length, and MGF1 over it, or over the digest an RSA-PSS
    /// key's parameters name for the mask (OpenSSL signs with the key's).
    fn pss_for(&self, scheme: SignatureScheme) -> Pss {
        let tls = Pss::tls(hash_of(scheme));
        match self {
            Key::Rsa { restricted: Some(key), .. } => Pss { mgf: key.mgf, ..tls },
            _ => tls,
        }
    }

    /// Whether a restricted RSA-PSS key may sign with `scheme`: its digest, and a salt at least its least.
    fn allows(&self, scheme: SignatureScheme) -> bool {
        match self {
            Key::Rsa { restricted: Some(key), .. } => {
                let tls = Pss::tls(hash_of(scheme));
                tls.hash == key.hash && tls.salt >= key.salt
            }
            _ => true,
        }
    }

    fn sign(&self, scheme: SignatureScheme, message: &[u8]) -> Option<Vec<u8>> {
        let hash = hash_of(scheme);
        match self {
            Key::Rsa { key, .. } if is_pss(scheme) => tls_crypto::rsa_pss_sign(self.pss_for(scheme), key, message),
            Key::Rsa { key, .. } => {
                let padding = match hash {
                    Hash::Sha384 => Pkcs1v15Sign::new::<sha2::Sha384>(),
                    Hash::Sha512 => Pkcs1v15Sign::new::<sha2::Sha512>(),
                    _ => Pkcs1v15Sign::new::<sha2::Sha256>(),
                };
                key.sign(padding, &hash.digest(message)).ok()
            }
            Key::P256(key) => {
                let signature: p256::ecdsa::Signature = key.sign_prehash(&sha2::Sha256::digest(message)).ok()?;
                Some(signature.to_der().to_bytes().to_vec())
            }
            Key::P384(key) => {
                let signature: p384::ecdsa::Signature = key.sign_prehash(&sha2::Sha384::digest(message)).ok()?;
                Some(signature.to_der().to_bytes().to_vec())
            }
            Key::P521(key) => {
                let signature: p521::ecdsa::Signature = key.sign_prehash(&sha2::Sha512::digest(message)).ok()?;
                Some(signature.to_der().to_bytes().to_vec())
            }
            Key::Ed448(key) => Some(key.sign_raw(message).to_bytes().to_vec()),
        }
    }
}

impl SigningKey for PureKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        let scheme = schemes(&self.0).iter().find(|s| offered.contains(s) && self.0.allows(**s))?;
        Some(Box::new(PureSigner { key: self.0.clone(), scheme: *scheme }))
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        match *self.0 {
            Key::Rsa { .. } => SignatureAlgorithm::RSA,
            Key::P256(_) | Key::P384(_) | Key::P521(_) => SignatureAlgorithm::ECDSA,
            Key::Ed448(_) => SignatureAlgorithm::ED448,
        }
    }
}

#[derive(Debug)]
struct PureSigner {
    key: Arc<Key>,
    scheme: SignatureScheme,
}

impl Signer for PureSigner {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        self.key
            .sign(self.scheme, message)
            .ok_or_else(|| rustls::Error::General("the client key could not sign".into()))
    }

    fn scheme(&self) -> SignatureScheme {
        self.scheme
    }
}

/// An ECPrivateKey's private scalar on P-521 (its curve named there, or by
/// the PKCS#8 algorithm's `curve`), or on P-256, P-384 or P-521 written with
/// explicit parameters (`openssl ec -param_enc explicit`, which ring does not
/// load), the curve by the scalar's length: whether it is the certificate's
/// key is proven before it is used (PureKey::matches).
fn ec_key(ec_private_key: &[u8], curve: Option<&[u8]>) -> Option<Key> {
    let mut input = ec_private_key;
    let mut fields = expect(&mut input, SEQUENCE)?.contents;
    expect(&mut fields, INTEGER)?;
    let scalar = expect(&mut fields, OCTET_STRING)?.contents;
    let named = next(&mut fields).filter(|e| e.tag == 0xa0).and_then(|e| {
        let mut params = e.contents;
        expect(&mut params, OID).map(|o| o.contents)
    });
    match (named.or(curve), scalar.len()) {
        (Some(oid), _) if oid == OID_P521 => p521::ecdsa::SigningKey::from_slice(scalar).ok().map(Key::P521),
        (None, 66) => p521::ecdsa::SigningKey::from_slice(scalar).ok().map(Key::P521),
        (None, 48) => p384::ecdsa::SigningKey::from_slice(scalar).ok().map(Key::P384),
        (None, 32) => p256::ecdsa::SigningKey::from_slice(scalar).ok().map(Key::P256),
        _ => None,
    }
}

/// The key of a PEM private key ring refused, or None when it is none of
/// the kinds here either.
pub(crate) fn load(der: &PrivateKeyDer<'_>) -> Option<PureKey> {
    let key = match der {
        PrivateKeyDer::Pkcs1(k) => Key::Rsa {
            key: RsaPrivateKey::from_pkcs1_der(k.secret_pkcs1_der()).ok()?,
            pss_only: false,
            restricted: None,
        },
        PrivateKeyDer::Sec1(k) => ec_key(k.secret_sec1_der(), None)?,
        PrivateKeyDer::Pkcs8(k) => {
            let mut input = k.secret_pkcs8_der();
            let mut fields = expect(&mut input, SEQUENCE)?.contents;
            expect(&mut fields, INTEGER)?;
            let mut algorithm = expect(&mut fields, SEQUENCE)?.contents;
            let oid = expect(&mut algorithm, OID)?.contents;
            let private = expect(&mut fields, OCTET_STRING)?.contents;
            match oid {
                OID_RSA_ENCRYPTION | OID_RSA_PSS => Key::Rsa {
                    key: RsaPrivateKey::from_pkcs1_der(private).ok()?,
                    pss_only: oid == OID_RSA_PSS,
                    // An RSA-PSS key's parameters, when it has them (a NULL is none).
                    restricted: match algorithm {
                        [] | [0x05, 0x00] => None,
                        params if oid == OID_RSA_PSS => Some(crate::tls_algorithms::pss_parameters(params)?),
                        _ => None,
                    },
                },
                OID_EC_PUBLIC_KEY => ec_key(private, expect(&mut algorithm, OID).map(|o| o.contents))?,
                OID_ED448 => {
                    let mut inner = private;
                    let bytes = expect(&mut inner, OCTET_STRING)?.contents;
                    Key::Ed448(Box::new(ed448_goldilocks::SigningKey::try_from(bytes.to_vec()).ok()?))
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(PureKey(Arc::new(key)))
}

impl PureKey {
    /// Whether this is the private key of the certificate's public key
    /// (`key_algorithm`, `public_key`: its SubjectPublicKeyInfo's), proven
    /// by a signature the public key verifies.
    pub(crate) fn matches(&self, key_algorithm: &[u8], public_key: &[u8]) -> bool {
        const PROBE: &[u8] = b"respbench: is this the certificate's key?";
        let Some(&scheme) = schemes(&self.0).iter().find(|s| self.0.allows(**s)) else { return false };
        let Some(signature) = self.0.sign(scheme, PROBE) else { return false };
        let algorithms = crate::tls_algorithms::SUPPORTED.mapping.iter().find(|(s, _)| *s == scheme);
        match *self.0 {
            Key::Rsa { pss_only: true, .. } => {
                crate::tls_algorithms::is_pss_key(key_algorithm)
                    && tls_crypto::rsa_pss(self.0.pss_for(scheme), public_key, PROBE, &signature)
            }
            _ => algorithms.is_some_and(|(_, algs)| {
                algs.iter().any(|a| {
                    a.public_key_alg_id().as_ref() == key_algorithm
                        && a.verify_signature(public_key, PROBE, &signature).is_ok()
                })
            }),
        }
    }
}

#[cfg(test)]
#[path = "../tests/openssl/mod.rs"]
mod openssl_for_tests;

#[cfg(test)]
mod tests {
    //! Client keys ring refuses, made here with openssl (skipped without
    //! it), in each PEM form openssl writes them: loaded, matched to their
    //! own certificate and not to another's, and signing what the
    //! certificate's key verifies under each scheme they offer.

    use rustls::pki_types::pem::PemObject;

    use super::openssl_for_tests::openssl;
    use super::*;
    use crate::x509::Certificate;

    #[test]
    fn keys_ring_refuses_sign_as_their_certificates_verify() {
        let dir = std::env::temp_dir().join(format!("respbench-tls-signing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ring = rustls::crypto::ring::default_provider();
        let cases: &[(&str, &[&str])] = &[
            ("p521", &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521", "-out", "p521.key"]),
            ("p521-sec1", &["ecparam", "-genkey", "-name", "secp521r1", "-noout", "-out", "p521-sec1.key"]),
            ("ed448", &["genpkey", "-algorithm", "ED448", "-out", "ed448.key"]),
            ("rsa-pss", &["genpkey", "-algorithm", "RSA-PSS", "-out", "rsa-pss.key"]),
            (
                "rsa-pss-sha512",
                &[
                    "genpkey",
                    "-algorithm",
                    "RSA-PSS",
                    "-pkeyopt",
                    "rsa_pss_keygen_md:sha512",
                    "-pkeyopt",
                    "rsa_pss_keygen_mgf1_md:sha512",
                    "-pkeyopt",
                    "rsa_pss_keygen_saltlen:64",
                    "-out",
                    "rsa-pss-sha512.key",
                ],
            ),
            ("rsa-2000", &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2000", "-out", "rsa-2000.key"]),
            ("rsa-2000-pkcs1", &["genrsa", "-traditional", "-out", "rsa-2000-pkcs1.key", "2000"]),
        ];
        let mut loaded = Vec::new();
        for (name, keygen) in cases {
            let (key, pem, subject) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN={name}"));
            if !(openssl(&dir, keygen)
                && openssl(
                    &dir,
                    &["req", "-x509", "-new", "-key", &key, "-out", &pem, "-days", "2", "-subj", &subject],
                ))
            {
                eprintln!("skipped: openssl did not make {name}");
                return;
            }
            let der = PrivateKeyDer::from_pem_file(dir.join(&key)).unwrap();
            assert!(ring.key_provider.load_private_key(der.clone_key()).is_err(), "{name}: ring signs with it");
            let pure = load(&der).unwrap_or_else(|| panic!("{name}: not loaded"));
            let cert = rustls::pki_types::CertificateDer::from_pem_file(dir.join(&pem)).unwrap();
            loaded.push((name, pure, cert));
        }
        for (name, pure, cert) in &loaded {
            let parsed = Certificate::parse(cert.as_ref()).unwrap();
            assert!(
                pure.matches(parsed.public_key_algorithm, parsed.public_key),
                "{name}: not its own certificate's key"
            );
            for (other, _, other_cert) in &loaded {
                let o = Certificate::parse(other_cert.as_ref()).unwrap();
                if o.public_key != parsed.public_key {
                    assert!(
                        !pure.matches(o.public_key_algorithm, o.public_key),
                        "{name} matched {other}'s certificate"
                    );
                }
            }
            // Every scheme it offers signs what the handshake check takes.
            for &scheme in schemes(&pure.0).iter().filter(|s| pure.0.allows(**s)) {
                let signer = pure.choose_scheme(&[scheme]).unwrap();
                let signature = signer.sign(b"handshake").unwrap();
                let valid = match crate::tls_algorithms::pss_key_scheme(scheme) {
                    Some(hash) => crate::tls_algorithms::pss_key_handshake(
                        hash,
                        parsed.public_key_algorithm,
                        parsed.public_key,
                        b"handshake",
                        &signature,
                    ),
                    None => crate::tls_algorithms::SUPPORTED.mapping.iter().filter(|(s, _)| *s == scheme).any(
                        |(_, algs)| {
                            algs.iter().any(|a| {
                                a.public_key_alg_id().as_ref() == parsed.public_key_algorithm
                                    && a.verify_signature(parsed.public_key, b"handshake", &signature).is_ok()
                            })
                        },
                    ),
                };
                assert!(valid, "{name}: {scheme:?} does not verify");
            }
            assert!(pure.choose_scheme(&[SignatureScheme::ED25519]).is_none(), "{name}");
            if **name == "rsa-pss-sha512" {
                // Restricted to SHA-512: it offers nothing else, as OpenSSL signs nothing else with it.
                assert!(pure.choose_scheme(&[RSA_PSS_PSS_SHA256, RSA_PSS_PSS_SHA384]).is_none());
                assert_eq!(
                    pure.choose_scheme(&[RSA_PSS_PSS_SHA256, RSA_PSS_PSS_SHA512]).unwrap().scheme(),
                    RSA_PSS_PSS_SHA512
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
