//! ServiceCIDR (`networking.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `networking.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ServiceCIDRStrategy);

/// What ServiceCIDR does differently.
pub struct ServiceCIDRStrategy;

impl Strategy for ServiceCIDRStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::SERVICE_CIDR)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ServiceCIDRs.
    pub(crate) static SERVICE_CIDR: Printer = Printer {
        columns: &[
            NAME,
            string(
                "CIDRs",
                field("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs"),
            ),
            AGE,
        ],
        print: |v, now| {
            let cidrs: Vec<&str> = arr(v, "/spec/cidrs")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            Row::of(vec![name(v), json!(cidrs.join(",")), age(v, now)])
        },
    };
}
