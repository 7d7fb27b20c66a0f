//! PEM certificates as OpenSSL reads them (redis-cli, redis-server): under
//! the label CERTIFICATE, and the two it reads as certificates too, X509
//! CERTIFICATE and TRUSTED CERTIFICATE (`openssl x509 -trustout`: the
//! certificate's DER followed by its trust settings, which are dropped
//! here, as a client's list of trusted CAs makes no use of them). Paired
//! with packages/cli/src/pem-certificates.ts.

use crate::der::next;

/// A block that is not whole or not base64.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

/// The certificates of a PEM text, DER, in the order written; what is not
/// a certificate block (keys, text between blocks) is skipped.
pub(crate) fn certificates(text: &[u8]) -> Result<Vec<Vec<u8>>, Malformed> {
    let mut out = Vec::new();
    let mut open: Option<(&[u8], Vec<u8>)> = None;
    for line in text.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if let Some((label, body)) = open.as_mut() {
            if let Some(end) = line.strip_prefix(b"-----END ").and_then(|l| l.strip_suffix(b"-----")) {
                if end != *label {
                    return Err(Malformed);
                }
                let mut der = decode_base64(body).ok_or(Malformed)?;
                if *label == b"TRUSTED CERTIFICATE" {
                    // The certificate, then its trust settings.
                    let mut rest = der.as_slice();
                    let whole = next(&mut rest).map(|e| e.whole.len()).ok_or(Malformed)?;
                    der.truncate(whole);
                }
                out.push(der);
                open = None;
            } else {
                body.extend_from_slice(line);
            }
            continue;
        }
        let Some(label) = line.strip_prefix(b"-----BEGIN ").and_then(|l| l.strip_suffix(b"-----")) else { continue };
        if matches!(label, b"CERTIFICATE" | b"X509 CERTIFICATE" | b"TRUSTED CERTIFICATE") {
            open = Some((label, Vec::new()));
        }
    }
    if open.is_some() { Err(Malformed) } else { Ok(out) }
}

/// Standard base64, padding optional, no other characters.
fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let text = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
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
        assert_eq!(
            certificates(text.as_bytes()),
            Ok(vec![vec![0x30, 3, 2, 1, 1], vec![0x30, 3, 2, 1, 2], vec![0x30, 3, 2, 1, 3]])
        );
        assert_eq!(certificates(b"-----BEGIN CERTIFICATE-----\nMAMC\n"), Err(Malformed));
        assert_eq!(certificates(b"-----BEGIN CERTIFICATE-----\nMA*C\n-----END CERTIFICATE-----\n"), Err(Malformed));
        assert_eq!(certificates(b"no blocks"), Ok(vec![]));
    }

    #[test]
    fn base64_decodes_as_rfc_4648_says() {
        assert_eq!(decode_base64(b"aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64(b"aGVsbG8h"), Some(b"hello!".to_vec()));
        assert_eq!(decode_base64(b"aGk"), Some(b"hi".to_vec()));
        assert_eq!(decode_base64(b"a-b"), None);
    }
}
