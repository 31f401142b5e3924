//! ValidatingAdmissionPolicyBinding (`admissionregistration.k8s.io/v1`): defaults, validation and
//! table of upstream's `pkg/apis/admissionregistration` and `pkg/printers` (the strategy
//! is `policy_kinds::BindingStrategy`, shared with the other flavour).

use super::policy_kinds::BindingStrategy;
use crate::registry::catalog::Kind;

/// What ValidatingAdmissionPolicyBinding does differently.
static STRATEGY: BindingStrategy = BindingStrategy { mutating: false };

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &STRATEGY).in_categories(&["api-extensions"]);
