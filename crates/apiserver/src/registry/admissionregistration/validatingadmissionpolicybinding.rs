//! ValidatingAdmissionPolicyBinding (`admissionregistration.k8s.io/v1`): defaults, validation and table of
//! upstream's `pkg/apis/admissionregistration` and `pkg/printers` (shared with the other
//! policy kinds in `policy_common`).

use serde_json::Value;

use super::policy_common;
use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind =
    Kind::new(&[], &ValidatingAdmissionPolicyBindingStrategy).in_categories(&["api-extensions"]);

/// What ValidatingAdmissionPolicyBinding does differently.
pub struct ValidatingAdmissionPolicyBindingStrategy;

impl Strategy for ValidatingAdmissionPolicyBindingStrategy {
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
        let ctx = Ctx::new(def, old);
        ctx.check(|c, e| {
            c.meta(e, obj, NameRule::Subdomain, false);
            policy_common::validate_binding(e, obj, true);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::VALIDATINGADMISSIONPOLICYBINDING)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// `kubectl get` columns.
    pub(crate) static VALIDATINGADMISSIONPOLICYBINDING: Printer = Printer {
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
