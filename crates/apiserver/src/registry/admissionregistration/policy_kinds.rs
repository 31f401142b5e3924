//! The strategies of the four admission policy kinds: a policy and a binding strategy,
//! each for the validating and the mutating flavour (upstream's
//! `pkg/registry/admissionregistration/{validating,mutating}admissionpolicy[binding]`
//! differ only in what `policy_common` checks and in one column).

use serde_json::Value;

use super::policy_common;
use crate::registry::catalog::{Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// ValidatingAdmissionPolicy or MutatingAdmissionPolicy.
pub struct PolicyStrategy {
    /// Whether this is the mutating flavour.
    pub mutating: bool,
    /// The kind's `kubectl get` columns.
    pub printer: &'static Printer,
}

impl Strategy for PolicyStrategy {
    /// A ValidatingAdmissionPolicy has a status (type checking); a mutating one none.
    fn subresources(&self) -> &'static [Subresource] {
        if self.mutating {
            &[]
        } else {
            &[Subresource::Status]
        }
    }

    fn uses_generation(&self) -> bool {
        true
    }

    /// Upstream's `PrepareForUpdate`: the generation moves when `spec` changes.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("spec") != new.get("spec")
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            policy_common::default_policy(o, self.mutating);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|c, e| {
            c.meta(e, obj, NameRule::Subdomain, false);
            if self.mutating {
                policy_common::validate_mutating_policy(e, obj);
            } else {
                policy_common::validate_validating_policy(e, obj);
            }
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(self.printer)
    }
}

/// ValidatingAdmissionPolicyBinding or MutatingAdmissionPolicyBinding.
pub struct BindingStrategy {
    /// Whether this is the mutating flavour.
    pub mutating: bool,
}

impl Strategy for BindingStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// Upstream's `PrepareForUpdate`: the generation moves when `spec` changes.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("spec") != new.get("spec")
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            policy_common::default_binding(o);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|c, e| {
            c.meta(e, obj, NameRule::Subdomain, false);
            policy_common::validate_binding(e, obj, !self.mutating);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::BINDING)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// A policy's columns: NAME, the number of `field` entries (`Validations` or
    /// `Mutations`), PARAMKIND, AGE.
    macro_rules! policy_printer {
        ($column:literal, $doc:literal, $pointer:literal) => {
            Printer {
                columns: &[
                    NAME,
                    integer($column, text($doc)),
                    string(
                        "ParamKind",
                        text("ParamKind specifies the kind of resources used to parameterize this policy"),
                    ),
                    AGE,
                ],
                print: |v, now| {
                    Row::of(vec![
                        name(v),
                        json!(arr(v, $pointer).len()),
                        json!(super::super::policy_common::param_kind_cell(v)),
                        age(v, now),
                    ])
                },
            }
        };
    }

    /// ValidatingAdmissionPolicy's `kubectl get` columns.
    pub(crate) static VALIDATING_POLICY: Printer = policy_printer!(
        "Validations",
        "Validations indicates the number of validation rules defined in this configuration",
        "/spec/validations"
    );

    /// MutatingAdmissionPolicy's `kubectl get` columns.
    pub(crate) static MUTATING_POLICY: Printer = policy_printer!(
        "Mutations",
        "Mutation indicates the number of mutations rules defined in this configuration",
        "/spec/mutations"
    );

    /// Both bindings' `kubectl get` columns.
    pub(crate) static BINDING: Printer = Printer {
        columns: &[
            NAME,
            string(
                "PolicyName",
                text(
                    "PolicyName indicates the policy definition which the policy binding binded to",
                ),
            ),
            string(
                "ParamRef",
                text("ParamRef indicates the param resource which sets the configration param"),
            ),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/policyName")),
                json!(super::super::policy_common::param_ref_cell(v)),
                age(v, now),
            ])
        },
    };
}
