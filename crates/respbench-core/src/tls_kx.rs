//! ECDHE on P-521 (secp521r1), which ring does not have: offered after
//! ring's groups, never first. An OpenSSL server with a P-521 certificate
//! takes a TLS 1.2 client only if the client names P-521 among its groups
//! (RFC 8422: the curve of an ECDSA server certificate must be one the
//! client supports), so without it redis-cli connects where the native
//! engine met "handshake failure". One exchange per connection.

use p521::elliptic_curve::Generate;
use p521::elliptic_curve::sec1::ToSec1Point;
use rustls::crypto::{ActiveKeyExchange, SharedSecret, SupportedKxGroup};
use rustls::{Error, NamedGroup, PeerMisbehaved};

#[derive(Debug)]
pub(crate) struct Secp521r1;

/// The group, for a provider's `kx_groups`.
pub(crate) static SECP521R1: &dyn SupportedKxGroup = &Secp521r1;

impl SupportedKxGroup for Secp521r1 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let secret = p521::ecdh::EphemeralSecret::try_generate().map_err(|_| Error::FailedToGetRandomBytes)?;
        let public = secret.public_key().to_sec1_point(false).as_bytes().to_vec();
        Ok(Box::new(Exchange { secret, public }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::secp521r1
    }
}

struct Exchange {
    secret: p521::ecdh::EphemeralSecret,
    public: Vec<u8>,
}

impl ActiveKeyExchange for Exchange {
    fn complete(self: Box<Self>, peer_pub_key: &[u8]) -> Result<SharedSecret, Error> {
        let peer = p521::PublicKey::from_sec1_bytes(peer_pub_key)
            .map_err(|_| Error::PeerMisbehaved(PeerMisbehaved::InvalidKeyShare))?;
        Ok(SharedSecret::from(self.secret.diffie_hellman(&peer).raw_secret_bytes().as_slice()))
    }

    fn pub_key(&self) -> &[u8] {
        &self.public
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::secp521r1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sides_agree_and_a_bad_point_is_refused() {
        let (a, b) = (Secp521r1.start().unwrap(), Secp521r1.start().unwrap());
        assert_eq!(a.pub_key().len(), 133);
        let b_public = b.pub_key().to_vec();
        let shared_a = a.complete(&b_public).unwrap();
        let shared_b = Secp521r1.start_and_complete(&b_public);
        assert!(shared_b.is_ok());
        assert_eq!(shared_a.secret_bytes().len(), 66);
        assert!(Secp521r1.start().unwrap().complete(&[4, 1, 2, 3]).is_err());
    }
}
