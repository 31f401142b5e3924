//! ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`): defaults, validation and table of
//! upstream's `pkg/apis/admissionregistration` and `pkg/printers` (shared with the other
//! policy kinds in `policy_common`).

use serde_json::Value;

use super::policy_common;
use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind =
    Kind::new(&[], &ValidatingAdmissionPolicyStrategy).in_categories(&["api-extensions"]);

/// What ValidatingAdmissionPolicy does differently.
pub struct ValidatingAdmissionPolicyStrategy;

impl Strategy for ValidatingAdmissionPolicyStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
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
            policy_common::default_policy(o, false);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let ctx = Ctx::new(def, old);
        ctx.check(|c, e| {
            c.meta(e, obj, NameRule::Subdomain, false);
            policy_common::validate_validating_policy(e, obj);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::VALIDATINGADMISSIONPOLICY)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// `kubectl get` columns.
    pub(crate) static VALIDATINGADMISSIONPOLICY: Printer = Printer {
        columns: &[
            NAME,
            integer("Validations", text("Validations indicates the number of validation rules defined in this configuration")),
            string("ParamKind", text("ParamKind specifies the kind of resources used to parameterize this policy")),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(arr(v, "/spec/validations").len()),
                json!(super::super::policy_common::param_kind_cell(v)),
                age(v, now),
            ])
        },
    };
}
