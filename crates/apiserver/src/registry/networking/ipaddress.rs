//! IPAddress (`networking.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `networking.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["ip"], &IPAddressStrategy);

/// What IPAddress does differently.
pub struct IPAddressStrategy;

impl Strategy for IPAddressStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::IP_ADDRESS)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// IPAddresses. Upstream declares two columns and prints three cells (the age last);
    /// clients print the declared columns.
    pub(crate) static IP_ADDRESS: Printer = Printer {
        columns: &[
            NAME,
            string(
                "ParentRef",
                field("io.k8s.api.networking.v1.IPAddressSpec", "parentRef"),
            ),
        ],
        print: |v, now| {
            let parent = match v.pointer("/spec/parentRef").filter(|p| p.is_object()) {
                Some(p) => {
                    let group = s(p, "/group");
                    let resource = s(p, "/resource");
                    let mut out = if group.is_empty() {
                        resource.to_lowercase()
                    } else {
                        format!("{resource}.{group}").to_lowercase()
                    };
                    if let Some(ns) = opt_s(p, "/namespace").filter(|n| !n.is_empty()) {
                        out = format!("{out}/{ns}");
                    }
                    format!("{out}/{}", s(p, "/name"))
                }
                None => "<none>".into(),
            };
            Row::of(vec![name(v), json!(parent), age(v, now)])
        },
    };
}
