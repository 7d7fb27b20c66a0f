//! PEM certificates as OpenSSL reads them (redis-cli, redis-server): under
//! the label CERTIFICATE, and the two it reads as certificates too, X509
//! CERTIFICATE and, for trusted CAs (`--cacert`, `--cacertdir`), TRUSTED
//! CERTIFICATE (`openssl x509 -trustout`: the certificate's DER followed by
//! its trust settings, `X509_CERT_AUX`, read here for what a TLS client's
//! verification makes of them: [`Trust`]). Paired with
//! packages/cli/src/pem-certificates.ts.

use crate::der::{OID, SEQUENCE, expect, next};

/// What a trusted certificate's settings say of server authentication, as
/// OpenSSL's `X509_check_trust` (`obj_trust`) reads them for an SSL server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trust {
    /// No trust list (none at all, or a reject list that leaves serverAuth
    /// out): trusted as OpenSSL trusts any self-signed CA it is given, a
    /// link of a chain otherwise.
    Default,
    /// Its trust list names serverAuth (or any purpose): an anchor even when not self-signed.
    Trusted,
    /// serverAuth (or any purpose) rejected, or a trust list that leaves it
    /// out (OpenSSL rejects then too): it vouches for no server, and a chain
    /// through it is refused.
    Rejected,
}

/// One certificate of a PEM file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PemCertificate {
    pub der: Vec<u8>,
    pub trust: Trust,
}

/// id-kp-serverAuth and anyExtendedKeyUsage, the OIDs OpenSSL looks for.
const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
const ANY_PURPOSE: &[u8] = &[0x55, 0x1d, 0x25, 0x00];

/// `X509_CERT_AUX ::= SEQUENCE { trust SEQUENCE OF OID OPTIONAL, reject
/// [0] SEQUENCE OF OID OPTIONAL, alias, keyid, other }`; None when it does
/// not parse.
fn trust_of(aux: &[u8]) -> Option<Trust> {
    let mut input = aux;
    let mut fields = expect(&mut input, SEQUENCE)?.contents;
    let names = |mut list: &[u8]| -> Option<bool> {
        let mut any = false;
        while !list.is_empty() {
            let oid = expect(&mut list, OID)?.contents;
            any |= oid == SERVER_AUTH || oid == ANY_PURPOSE;
        }
        Some(any)
    };
    let (mut trust, mut reject) = (None, None);
    while !fields.is_empty() {
        let field = next(&mut fields)?;
        match field.tag {
            SEQUENCE if trust.is_none() && reject.is_none() => trust = Some(names(field.contents)?),
            0xa0 if reject.is_none() => reject = Some(names(field.contents)?),
            _ => {}
        }
    }
    Some(match (trust, reject) {
        (_, Some(true)) => Trust::Rejected,
        (Some(true), _) => Trust::Trusted,
        (Some(false), _) => Trust::Rejected,
        (None, _) => Trust::Default,
    })
}

/// A block that is not whole or not base64.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

/// How a file is read, as OpenSSL reads it for the purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A certificate chain (--cert): no TRUSTED CERTIFICATE blocks.
    Chain,
    /// A CA file (--cacert): trust settings in TRUSTED CERTIFICATE blocks only.
    CaFile,
    /// A CA folder's file (--cacertdir): trust settings after any certificate.
    CaFolder,
}

/// The certificates of a PEM text, in the order written; what is not a
/// certificate block (keys, text between blocks) is skipped.
pub(crate) fn certificates(text: &[u8], purpose: Purpose) -> Result<Vec<PemCertificate>, Malformed> {
    let mut out = Vec::new();
    let mut open: Option<(&[u8], Vec<u8>)> = None;
    // OpenSSL's reader skips a UTF-8 byte order mark on the first line it reads looking for a block
    // (the file's first, or the one after a block's END); a BEGIN or END line starts at its first
    // column, and trailing spaces are dropped.
    let mut first_of_search = true;
    for line in text.split(|&b| b == b'\n') {
        let mut line = line.trim_ascii_end();
        if open.is_none() && std::mem::take(&mut first_of_search) {
            line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        }
        if let Some((label, body)) = open.as_mut() {
            if let Some(end) = line.strip_prefix(b"-----END ").and_then(|l| l.strip_suffix(b"-----")) {
                if end != *label {
                    return Err(Malformed);
                }
                let mut der = decode_base64(body).ok_or(Malformed)?;
                // The certificate, then (trust settings) what follows it.
                let mut rest = der.as_slice();
                let whole = next(&mut rest).filter(|e| e.tag == SEQUENCE).map(|e| e.whole.len()).ok_or(Malformed)?;
                let counted =
                    purpose != Purpose::Chain && (*label == b"TRUSTED CERTIFICATE" || purpose == Purpose::CaFolder);
                let trust = if counted && !rest.is_empty() { trust_of(rest).ok_or(Malformed)? } else { Trust::Default };
                der.truncate(whole);
                out.push(PemCertificate { der, trust });
                open = None;
                first_of_search = true;
            } else {
                // Each line base64 alone (spaces around it aside), as OpenSSL's decoder takes it.
                let line = line.trim_ascii();
                if !line.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')) {
                    return Err(Malformed);
                }
                body.extend_from_slice(line);
            }
            continue;
        }
        let Some(label) = line.strip_prefix(b"-----BEGIN ").and_then(|l| l.strip_suffix(b"-----")) else { continue };
        if matches!(label, b"CERTIFICATE" | b"X509 CERTIFICATE")
            || (purpose != Purpose::Chain && label == b"TRUSTED CERTIFICATE")
        {
            open = Some((label, Vec::new()));
        }
    }
    if open.is_some() { Err(Malformed) } else { Ok(out) }
}

/// Standard base64, padding optional, no other characters.
pub(crate) fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let text = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
    if text.contains(&b'=') {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut bits, mut count) = (0u32, 0u32);
    for &c in text {
        bits = (bits << 6) | u32::from(value(c)?);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_are_read_under_each_label_openssl_reads_them_under() {
        // A "certificate" of one SEQUENCE, and trust settings after it.
        let block = |label: &str, b64: &str| format!("-----BEGIN {label}-----\n{b64}\n-----END {label}-----\n");
        let text = format!(
            "text before\n{}{}{}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            block("CERTIFICATE", "MAMCAQE="),
            block("X509 CERTIFICATE", "MAMCAQI="),
            block("TRUSTED CERTIFICATE", "MAMCAQMwAA=="),
        );
        let der = |c: &PemCertificate| c.der.clone();
        let read = certificates(text.as_bytes(), Purpose::CaFile).unwrap();
        assert_eq!(
            read.iter().map(der).collect::<Vec<_>>(),
            vec![vec![0x30, 3, 2, 1, 1], vec![0x30, 3, 2, 1, 2], vec![0x30, 3, 2, 1, 3]]
        );
        assert!(read.iter().all(|c| c.trust == Trust::Default));
        // A certificate chain (--cert) is not read under TRUSTED CERTIFICATE.
        assert_eq!(certificates(text.as_bytes(), Purpose::Chain).unwrap().len(), 2);
        let ca = |text: &[u8]| certificates(text, Purpose::CaFile);
        assert_eq!(ca(b"-----BEGIN CERTIFICATE-----\nMAMC\n"), Err(Malformed));
        assert_eq!(ca(b"-----BEGIN CERTIFICATE-----\nMA*C\n-----END CERTIFICATE-----\n"), Err(Malformed));
        assert_eq!(ca(b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END X509 CERTIFICATE-----\n"), Err(Malformed));
        assert_eq!(ca(b"no blocks"), Ok(vec![]));
        // A byte order mark before the first line; text before BEGIN on its line is no block.
        assert_eq!(
            ca(b"\xef\xbb\xbf-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n").unwrap().len(),
            1
        );
        assert_eq!(ca(b"xx-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n"), Ok(vec![]));
        // An indented BEGIN line is no block (OpenSSL reads none there); a mark before the block after another is skipped.
        assert_eq!(ca(b" -----BEGIN CERTIFICATE-----\n MAMCAQE=\n -----END CERTIFICATE-----\n"), Ok(vec![]));
        let two = b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n\xef\xbb\xbf-----BEGIN CERTIFICATE-----\nMAMCAQI=\n-----END CERTIFICATE-----\n";
        assert_eq!(ca(two).unwrap().len(), 2);
        // Trust settings after a CERTIFICATE block: counted in a CA folder's file, not in a CA file.
        let rejected = b"-----BEGIN CERTIFICATE-----\nMAMCAQEwDKAKBggrBgEFBQcDAQ==\n-----END CERTIFICATE-----\n";
        assert_eq!(ca(rejected).unwrap()[0].trust, Trust::Default);
        assert_eq!(certificates(rejected, Purpose::CaFolder).unwrap()[0].trust, Trust::Rejected);
    }

    #[test]
    fn trust_settings_say_what_openssl_makes_of_them_for_a_server() {
        let cert = [0x30u8, 3, 2, 1, 1];
        let server_auth = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
        let client_auth = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
        let aux = |parts: &[(u8, &[u8])]| {
            let mut inner = Vec::new();
            for (tag, oids) in parts {
                inner.extend([*tag, oids.len() as u8]);
                inner.extend(*oids);
            }
            let mut out = vec![0x30, inner.len() as u8];
            out.extend(inner);
            out
        };
        let trust = |aux: Vec<u8>| {
            let mut der = cert.to_vec();
            der.extend(aux);
            trust_of(&der[cert.len()..])
        };
        assert_eq!(trust(aux(&[(0x30, &server_auth)])), Some(Trust::Trusted));
        assert_eq!(trust(aux(&[(0x30, &client_auth)])), Some(Trust::Rejected));
        assert_eq!(trust(aux(&[(0x30, &server_auth), (0xa0, &server_auth)])), Some(Trust::Rejected));
        // A reject list that leaves serverAuth out, and no trust list: OpenSSL's default (a self-signed CA trusted).
        assert_eq!(trust(aux(&[(0xa0, &client_auth)])), Some(Trust::Default));
        assert_eq!(trust(aux(&[(0x0c, b"alias")])), Some(Trust::Default));
        assert_eq!(trust(vec![0x31, 0]), None);
    }

    #[test]
    fn base64_decodes_as_rfc_4648_says() {
        assert_eq!(decode_base64(b"aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64(b"aGVsbG8h"), Some(b"hello!".to_vec()));
        assert_eq!(decode_base64(b"aGk"), Some(b"hi".to_vec()));
        assert_eq!(decode_base64(b"a-b"), None);
    }
}
