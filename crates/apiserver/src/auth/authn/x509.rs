//! Client certificates (upstream `authentication/request/x509`): the TLS handshake has
//! already verified the chain against the client CA (`--client-ca-file`); the user is
//! the leaf's Common Name, its groups the Organizations, and its credential id the
//! SHA-256 of the certificate.

use crate::auth::PeerCertificate;
use crate::machinery::user::UserInfo;

/// The user extra key of a credential's id.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// The user a verified client certificate names; `None` without a Common Name
/// (upstream `CommonNameUserConversion`) or for an unparsable certificate.
pub fn user(peer: &PeerCertificate) -> Option<UserInfo> {
    use x509_parser::prelude::FromDer;
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(&peer.0).ok()?;
    let subject = cert.subject();
    let cn = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())?
        .to_string();
    if cn.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    use sha2::Digest;
    let hash = sha2::Sha256::digest(peer.0.as_slice());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    let mut extra = std::collections::BTreeMap::new();
    extra.insert(
        CREDENTIAL_ID_KEY.to_string(),
        vec![format!("X509SHA256={hex}")],
    );
    Some(UserInfo {
        name: cn,
        uid: String::new(),
        groups,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cert(cn: Option<&str>, orgs: &[&str]) -> PeerCertificate {
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            p.distinguished_name.push(rcgen::DnType::CommonName, cn);
        }
        for o in orgs {
            p.distinguished_name
                .push(rcgen::DnType::OrganizationName, *o);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        PeerCertificate(Arc::new(p.self_signed(&key).unwrap().der().to_vec()))
    }

    #[test]
    fn common_name_and_organizations() {
        // (rcgen writes one value per attribute type: one Organization here)
        let u = user(&cert(Some("jane"), &["dev"])).unwrap();
        assert_eq!(u.name, "jane");
        assert_eq!(u.groups, ["dev"]);
        assert!(user(&cert(Some("jane"), &[])).unwrap().groups.is_empty());
        assert!(u.extra[CREDENTIAL_ID_KEY][0].starts_with("X509SHA256="));
        assert_eq!(
            u.extra[CREDENTIAL_ID_KEY][0].len(),
            "X509SHA256=".len() + 64
        );
        assert!(user(&cert(None, &["system:masters"])).is_none());
        assert!(user(&PeerCertificate(Arc::new(vec![1, 2, 3]))).is_none());
    }
}
