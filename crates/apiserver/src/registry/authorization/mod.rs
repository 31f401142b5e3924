//! `authorization.k8s.io/v1`: the access reviews (SubjectAccessReview,
//! SelfSubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview). They are
//! create-only and never stored: the server answers a POST with the review's status
//! (`crate::endpoints` `review.rs`); their catalogue entries give discovery, OpenAPI and
//! routing.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use apimachinery::field::Cause;

/// What a review kind does differently: only `create`, nothing stored (its request is
/// validated where it is answered).
pub struct ReviewStrategy;

impl Strategy for ReviewStrategy {
    fn create_only(&self) -> bool {
        true
    }

    fn delete_collection(&self) -> bool {
        false
    }

    fn validate(&self, _def: &ResourceDef, _obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        Vec::new()
    }
}

/// `subjectaccessreviews`.
pub static SUBJECT_ACCESS_REVIEW: Kind = Kind::new(&[], &ReviewStrategy);
/// `selfsubjectaccessreviews`.
pub static SELF_SUBJECT_ACCESS_REVIEW: Kind = Kind::new(&[], &ReviewStrategy);
/// `localsubjectaccessreviews`.
pub static LOCAL_SUBJECT_ACCESS_REVIEW: Kind = Kind::new(&[], &ReviewStrategy);
/// `selfsubjectrulesreviews`.
pub static SELF_SUBJECT_RULES_REVIEW: Kind = Kind::new(&[], &ReviewStrategy);
