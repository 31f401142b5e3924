//! ServiceAccount (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["sa"], &ServiceAccountStrategy);

/// What ServiceAccount does differently.
pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Token]
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::SERVICE_ACCOUNT)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ServiceAccounts.
    pub(crate) static SERVICE_ACCOUNT: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Secrets",
                field("io.k8s.api.core.v1.ServiceAccount", "secrets"),
            ),
            AGE,
        ],
        print: |v, now| Row::of(vec![name(v), json!(arr(v, "/secrets").len()), age(v, now)]),
    };
}
