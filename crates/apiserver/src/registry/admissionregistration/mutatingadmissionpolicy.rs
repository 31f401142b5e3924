//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1`): defaults, validation and table of
//! upstream's `pkg/apis/admissionregistration` and `pkg/printers` (the strategy is
//! `policy_kinds::PolicyStrategy`, shared with the other flavour).

use super::policy_kinds::{printer, PolicyStrategy};
use crate::registry::catalog::Kind;

/// What MutatingAdmissionPolicy does differently.
static STRATEGY: PolicyStrategy = PolicyStrategy {
    mutating: true,
    printer: &printer::MUTATING_POLICY,
};

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &STRATEGY).in_categories(&["api-extensions"]);
