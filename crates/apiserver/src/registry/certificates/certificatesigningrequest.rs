//! CertificateSigningRequest (`certificates.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `certificates.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["csr"], &CertificateSigningRequestStrategy);

/// What CertificateSigningRequest does differently.
pub struct CertificateSigningRequestStrategy;

impl Strategy for CertificateSigningRequestStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Approval, Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::PathSegment)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CSR)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";

    fn csr_condition(v: &Value) -> String {
        let has = |ty: &str| {
            arr(v, "/status/conditions")
                .iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        };
        let mut status = if has("Denied") {
            "Denied".to_string()
        } else if has("Approved") {
            "Approved".to_string()
        } else {
            "Pending".to_string()
        };
        if has("Failed") {
            status.push_str(",Failed");
        }
        if !s(v, "/status/certificate").is_empty() {
            status.push_str(",Issued");
        }
        status
    }

    /// CertificateSigningRequests.
    pub(crate) static CSR: Printer = Printer {
        columns: &[
            NAME,
            AGE,
            string("SignerName", field(CSR_SPEC, "signerName")),
            string("Requestor", field(CSR_SPEC, "request")),
            string("RequestedDuration", field(CSR_SPEC, "expirationSeconds")),
            string(
                "Condition",
                field(
                    "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
                    "conditions",
                ),
            ),
        ],
        print: |v, now| {
            let signer = opt_s(v, "/spec/signerName")
                .filter(|x| !x.is_empty())
                .unwrap_or("<none>");
            let duration = v
                .pointer("/spec/expirationSeconds")
                .and_then(Value::as_i64)
                .map_or_else(
                    || "<none>".to_string(),
                    |secs| human_duration(secs.saturating_mul(1_000_000_000)),
                );
            Row::of(vec![
                name(v),
                age(v, now),
                json!(signer),
                json!(s(v, "/spec/username")),
                json!(duration),
                json!(csr_condition(v)),
            ])
        },
    };
}
