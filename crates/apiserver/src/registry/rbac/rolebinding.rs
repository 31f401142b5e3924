//! RoleBinding (`rbac.authorization.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `rbac.authorization.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &RoleBindingStrategy);

/// What RoleBinding does differently.
pub struct RoleBindingStrategy;

impl Strategy for RoleBindingStrategy {
    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::PathSegment)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::ROLE_BINDING)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        crate::registry::rbac::binding_defaults(o);
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const ROLE_BINDING_COLUMNS: [Column; 6] = binding_columns(
        "io.k8s.api.rbac.v1.RoleBinding",
        [
            "Users in the roleBinding",
            "Groups in the roleBinding",
            "ServiceAccounts in the roleBinding",
        ],
    );

    /// RoleBindings.
    pub(crate) static ROLE_BINDING: Printer = Printer {
        columns: &ROLE_BINDING_COLUMNS,
        print: binding_row,
    };
}
