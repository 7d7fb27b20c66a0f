//! Each signature algorithm this module adds to ring's, on certificates
//! openssl makes here (skipped without it): a CA of that kind signs a
//! certificate, and the signature verifies with the CA's key, and not once
//! a byte of it is changed, nor with another CA's key of the same kind.

use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::*;
use crate::x509::Certificate;

#[path = "../../tests/openssl/mod.rs"]
mod openssl_for_tests;
use openssl_for_tests::openssl;

/// A CA made from a key of `genpkey` (its arguments), and a leaf it signs
/// with `sign` (x509 -req's digest and -sigopt arguments); both CAs of a
/// case (`NAME-a`, `NAME-b`) and the leaf of the first. False when openssl failed.
fn make(dir: &Path, name: &str, genpkey: &[&str], sign: &[&str]) -> bool {
    let made = |ca: &str| {
        let key = format!("{ca}.key");
        let pem = format!("{ca}.pem");
        let subject = format!("/CN={ca}");
        let mut args = vec!["genpkey"];
        args.extend(genpkey);
        args.extend(["-out", &key]);
        openssl(dir, &args)
            && openssl(dir, &["req", "-x509", "-new", "-key", &key, "-out", &pem, "-days", "2", "-subj", &subject])
    };
    let (a, b) = (format!("{name}-a"), format!("{name}-b"));
    let (ca, ca_key, leaf_key, leaf_csr, leaf) = (
        format!("{a}.pem"),
        format!("{a}.key"),
        format!("{name}-leaf.key"),
        format!("{name}-leaf.csr"),
        format!("{name}-leaf.pem"),
    );
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &leaf_csr,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &leaf,
        "-days",
        "2",
    ];
    args.extend(sign);
    made(&a)
        && made(&b)
        && openssl(
            dir,
            &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", &leaf_key, "-out", &leaf_csr, "-subj", "/CN=leaf"],
        )
        && openssl(dir, &args)
}

fn der(dir: &Path, name: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(dir.join(format!("{name}.pem"))).unwrap()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("respbench-tls-algorithms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn what_openssl_verifies_and_ring_does_not_verifies_here_and_nothing_else_does() {
    let dir = temp_dir();
    if !openssl(
        &dir,
        &["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:2048", "-out", "dsa.param"],
    ) {
        eprintln!("skipped: openssl did not make DSA parameters");
        return;
    }
    let ec = |curve: &'static str| ["-algorithm", "EC", "-pkeyopt", curve];
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("p224", &ec("ec_paramgen_curve:P-224"), &["-sha256"]),
        ("p521-sha512", &ec("ec_paramgen_curve:P-521"), &["-sha512"]),
        ("p521-sha256", &ec("ec_paramgen_curve:P-521"), &["-sha256"]),
        ("p256-sha512", &ec("ec_paramgen_curve:P-256"), &["-sha512"]),
        ("p384-sha224", &ec("ec_paramgen_curve:P-384"), &["-sha224"]),
        ("bp256", &ec("ec_paramgen_curve:brainpoolP256r1"), &["-sha256"]),
        ("bp384", &ec("ec_paramgen_curve:brainpoolP384r1"), &["-sha384"]),
        ("ed448", &["-algorithm", "ED448"], &[]),
        ("rsa-2000", &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2000"], &["-sha256"]),
        ("rsa-sha224", &["-algorithm", "RSA"], &["-sha224"]),
        (
            "rsa-pss-salt-20",
            &["-algorithm", "RSA"],
            &["-sha256", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:20"],
        ),
        (
            "rsa-2000-pss-max",
            &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2000"],
            &["-sha384", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:max"],
        ),
        ("pss-key", &["-algorithm", "RSA-PSS"], &["-sha256"]),
        (
            "pss-key-sha512",
            &[
                "-algorithm",
                "RSA-PSS",
                "-pkeyopt",
                "rsa_pss_keygen_md:sha512",
                "-pkeyopt",
                "rsa_pss_keygen_mgf1_md:sha512",
            ],
            &["-sha512"],
        ),
        ("dsa", &["-paramfile", "dsa.param"], &["-sha256"]),
        ("dsa-sha224", &["-paramfile", "dsa.param"], &["-sha224"]),
        // ring's own, through the same list.
        ("rsa-2048", &["-algorithm", "RSA"], &["-sha256"]),
        ("p256", &ec("ec_paramgen_curve:P-256"), &["-sha256"]),
    ];
    for (name, genpkey, sign) in cases {
        assert!(make(&dir, name, genpkey, sign), "{name}: openssl could not make the certificates");
        let (a, b, leaf) =
            (der(&dir, &format!("{name}-a")), der(&dir, &format!("{name}-b")), der(&dir, &format!("{name}-leaf")));
        let (a, b, leaf) =
            (Certificate::parse(&a).unwrap(), Certificate::parse(&b).unwrap(), Certificate::parse(&leaf).unwrap());
        let algorithms = for_chain([a, b, leaf].into_iter());
        assert!(
            signed_by(&leaf, a.public_key_algorithm, a.public_key, &algorithms),
            "{name}: the CA's signature does not verify"
        );
        assert!(
            !signed_by(&leaf, b.public_key_algorithm, b.public_key, &algorithms),
            "{name}: another CA's key verifies it"
        );
        let mut changed = leaf.signature.to_vec();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        let mut tampered = leaf;
        tampered.signature = &changed;
        assert!(
            !signed_by(&tampered, a.public_key_algorithm, a.public_key, &algorithms),
            "{name}: a changed signature verifies"
        );
        let mut message = leaf.signed.to_vec();
        message[10] ^= 1;
        let mut forged = leaf;
        forged.signed = &message;
        assert!(
            !signed_by(&forged, a.public_key_algorithm, a.public_key, &algorithms),
            "{name}: a changed certificate verifies"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_handshake_offers_the_schemes_openssl_servers_sign_with() {
    let offered = SUPPORTED.supported_schemes();
    for scheme in [
        SignatureScheme::ECDSA_NISTP256_SHA256,
        SignatureScheme::ECDSA_NISTP384_SHA384,
        SignatureScheme::ECDSA_NISTP521_SHA512,
        SignatureScheme::ED25519,
        SignatureScheme::ED448,
        SignatureScheme::RSA_PSS_SHA256,
        RSA_PSS_PSS_SHA256,
        RSA_PSS_PSS_SHA512,
        SignatureScheme::RSA_PKCS1_SHA256,
    ] {
        assert!(offered.contains(&scheme), "{scheme:?}");
    }
    // TLS 1.3 takes the first algorithm of a scheme: its own curve.
    let first = |s: SignatureScheme| SUPPORTED.mapping.iter().find(|(m, _)| *m == s).unwrap().1[0].public_key_alg_id();
    assert_eq!(first(SignatureScheme::ECDSA_NISTP521_SHA512), alg_id::ECDSA_P521);
    assert_eq!(first(SignatureScheme::ECDSA_NISTP256_SHA256), alg_id::ECDSA_P256);
}

#[test]
fn rsa_pss_parameters_are_read_as_rfc_4055_writes_them() {
    // openssl's sha256 / mgf1-sha256 / salt 222, and the same with the salt's default (20).
    let params = |salt: &[u8]| {
        let mut p = vec![0x30, 0];
        p.extend([
            0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00,
        ]);
        p.extend([0xa1, 0x1c, 0x30, 0x1a, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08]);
        p.extend([0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00]);
        p.extend(salt);
        p[1] = (p.len() - 2) as u8;
        p
    };
    assert_eq!(pss_parameters(&params(&[0xa2, 0x04, 0x02, 0x02, 0x00, 0xde])), Some((Hash::Sha256, 222)));
    assert_eq!(pss_parameters(&params(&[])), Some((Hash::Sha256, 20)));
    // A mask over another digest, and SHA-1 (the default when no digest is named), are not taken.
    let mut other_mask = params(&[]);
    let at = other_mask.len() - 3;
    other_mask[at] = 0x02;
    assert_eq!(pss_parameters(&other_mask), None);
    assert_eq!(pss_parameters(&[0x30, 0x00]), None);
}
