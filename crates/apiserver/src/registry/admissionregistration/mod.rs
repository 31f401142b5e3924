//! `admissionregistration.k8s.io/v1`: the webhook configurations and the admission
//! policies (with their bindings) that the dynamic admission chain (`crate::admission`)
//! reads.

pub mod mutatingadmissionpolicy;
pub mod mutatingadmissionpolicybinding;
pub mod mutatingwebhookconfiguration;
mod policy_common;
mod policy_kinds;
pub mod validatingadmissionpolicy;
pub mod validatingadmissionpolicybinding;
pub mod validatingwebhookconfiguration;
