//! Who may approve and sign CertificateSigningRequests (upstream's admission plugins
//! `CertificateApproval` and `CertificateSigning`, `plugin/pkg/admission/certificates`).
//!
//! Approving a CSR (`/approval`) needs the `approve` verb, setting its certificate
//! (`/status` with a new `status.certificate`) the `sign` verb, on the `signers`
//! resource of `certificates.k8s.io` named by the CSR's `spec.signerName`, or by its
//! domain's wildcard `<domain>/*` (upstream `IsAuthorizedForSignerName`). The write path
//! (`endpoints/write.rs`) asks [`grants`] before it takes the store's lock and applies
//! the answer to the update with [`SignerGrants::admit`].

use serde_json::Value;

use super::{Attributes, Auth, Decision, RequestInfo, UserInfo};
use crate::registry::catalog::{ResourceDef, Subresource};
use crate::storage::store::StoredObject;
use apimachinery::gofmt::quote;
use apimachinery::status::{ApiError, ApiResult};

const GROUP: &str = "certificates.k8s.io";
const CSRS: &str = "certificatesigningrequests";

/// The authorizer's decisions for one update of a CSR through a subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignerGrants {
    sub: Subresource,
    signer: String,
    allowed: bool,
}

/// Whether `user` may `verb` (`approve`, `sign`) requests of `signer`: by the signer's
/// own name, else by `<domain>/*`.
pub fn authorized_for_signer(auth: &Auth, user: &UserInfo, verb: &str, signer: &str) -> bool {
    let ask = |name: &str| {
        let request = RequestInfo {
            resource_request: true,
            verb: verb.to_string(),
            api_prefix: "apis".into(),
            api_group: GROUP.into(),
            api_version: "*".into(),
            resource: "signers".into(),
            name: name.to_string(),
            ..RequestInfo::default()
        };
        auth.authorizer
            .authorize(&Attributes {
                user,
                request: &request,
            })
            .0
            == Decision::Allow
    };
    if ask(signer) {
        return true;
    }
    let domain = signer.split('/').next().unwrap_or("");
    ask(&format!("{domain}/*"))
}

/// The decisions an update of a CSR through `sub` needs (`None` for anything else, and
/// for writes the server makes itself): `approve` for `/approval`, `sign` for
/// `/status`, for the signer of the stored CSR.
pub fn grants(
    auth: &Auth,
    def: &ResourceDef,
    sub: Option<Subresource>,
    stored: Option<&StoredObject>,
) -> Option<SignerGrants> {
    if def.group != GROUP || def.plural != CSRS {
        return None;
    }
    let sub = sub.filter(|s| matches!(s, Subresource::Approval | Subresource::Status))?;
    let signer = stored?.field("spec.signerName").unwrap_or("").to_string();
    let user = crate::machinery::user::current()?;
    let verb = if sub == Subresource::Approval {
        "approve"
    } else {
        "sign"
    };
    let allowed = authorized_for_signer(auth, &user, verb, &signer);
    Some(SignerGrants {
        sub,
        signer,
        allowed,
    })
}

impl SignerGrants {
    /// Upstream's 403 when the update of CSR `name` from `old` to `new` needs a
    /// permission the user lacks: every approval update, and status updates that
    /// change `status.certificate`.
    pub fn admit(&self, name: &str, old: &Value, new: &Value) -> ApiResult<()> {
        if self.allowed {
            return Ok(());
        }
        let action = match self.sub {
            Subresource::Approval => "approve",
            _ => {
                if old.pointer("/status/certificate") == new.pointer("/status/certificate") {
                    return Ok(());
                }
                "sign"
            }
        };
        Err(ApiError::forbidden(format!(
            "{CSRS}.{GROUP} {} is forbidden: user not permitted to {action} requests with signerName {}",
            quote(name),
            quote(&self.signer)
        ))
        .with_details(GROUP, CSRS, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Allows `verb` on the listed signer names only.
    struct Signers(&'static str, &'static [&'static str]);

    impl super::super::Authorizer for Signers {
        fn authorize(&self, attrs: &Attributes<'_>) -> (Decision, String) {
            let r = attrs.request;
            let ok = r.api_group == GROUP
                && r.resource == "signers"
                && r.verb == self.0
                && self.1.contains(&r.name.as_str());
            let d = if ok {
                Decision::Allow
            } else {
                Decision::NoOpinion
            };
            (d, String::new())
        }
    }

    fn auth(verb: &'static str, names: &'static [&'static str]) -> Auth {
        Auth {
            authenticator: None,
            anonymous: false,
            authorizer: Arc::new(Signers(verb, names)),
            service_accounts: None,
        }
    }

    // upstream plugin/pkg/admission/certificates/util_test.go TestIsAuthorizedForSignerName
    #[test]
    fn signer_name_or_its_domain_wildcard_authorizes() {
        let u = UserInfo::new("alice", &[]);
        let cases: &[(&[&str], &str, bool)] = &[
            (&["abc.com/xyz"], "abc.com/xyz", true),
            (&["abc.com/*"], "abc.com/xyz", true),
            (&["abc.com/other"], "abc.com/xyz", false),
            (&["xyz.com/*"], "abc.com/xyz", false),
            (&[], "abc.com/xyz", false),
        ];
        for (names, signer, want) in cases {
            let names: &'static [&'static str] = Box::leak(names.to_vec().into_boxed_slice());
            assert_eq!(
                authorized_for_signer(&auth("approve", names), &u, "approve", signer),
                *want,
                "{names:?} {signer}"
            );
            assert!(!authorized_for_signer(
                &auth("sign", names),
                &u,
                "approve",
                signer
            ));
        }
    }

    #[test]
    fn refusals_carry_upstream_messages() {
        let g = SignerGrants {
            sub: Subresource::Approval,
            signer: "example.com/s".into(),
            allowed: false,
        };
        let e = g.admit("csr1", &Value::Null, &Value::Null).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "certificatesigningrequests.certificates.k8s.io \"csr1\" is forbidden: user not permitted to approve requests with signerName \"example.com/s\""
        );
        let s = SignerGrants {
            sub: Subresource::Status,
            ..g
        };
        let old = serde_json::json!({"status": {"conditions": []}});
        let new = serde_json::json!({"status": {"certificate": "eA=="}});
        assert!(s.admit("csr1", &old, &old).is_ok(), "no new certificate");
        let e = s.admit("csr1", &old, &new).unwrap_err();
        assert!(e
            .message
            .ends_with("user not permitted to sign requests with signerName \"example.com/s\""));
    }
}
