//! `authentication.k8s.io/v1`: TokenReview and SelfSubjectReview, create-only and never
//! stored like the access reviews ([`crate::registry::authorization::ReviewStrategy`]).

use crate::registry::authorization::ReviewStrategy;
use crate::registry::catalog::Kind;

/// `tokenreviews`.
pub static TOKEN_REVIEW: Kind = Kind::new(&[], &ReviewStrategy);
/// `selfsubjectreviews`.
pub static SELF_SUBJECT_REVIEW: Kind = Kind::new(&[], &ReviewStrategy);
