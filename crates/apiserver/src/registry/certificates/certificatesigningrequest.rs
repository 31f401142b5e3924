//! CertificateSigningRequest (`certificates.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::Strategy;
use crate::registry::catalog::{Kind, ResourceDef, Subresource};
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
        crate::registry::table::legacy("certificates.k8s.io", "CertificateSigningRequest")
    }
}
