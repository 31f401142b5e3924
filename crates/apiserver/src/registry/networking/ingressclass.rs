//! IngressClass (`networking.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `networking.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &IngressClassStrategy);

/// What IngressClass does differently.
pub struct IngressClassStrategy;

impl Strategy for IngressClassStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::INGRESS_CLASS)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        if let Some(p) = child(o, "spec").and_then(|s| child(s, "parameters")) {
            default_ptr(p, "scope", json!("Cluster"));
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// IngressClasses.
    pub(crate) static INGRESS_CLASS: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Controller",
                text("Controller that is responsible for handling this class"),
            ),
            string(
                "Parameters",
                text("A reference to a resource with additional parameters"),
            ),
            AGE,
        ],
        print: |v, now| {
            let parameters = match v.pointer("/spec/parameters").filter(|p| p.is_object()) {
                Some(p) => {
                    let mut out = s(p, "/kind").to_string();
                    if let Some(g) = opt_s(p, "/apiGroup") {
                        out = format!("{out}.{g}");
                    }
                    format!("{out}/{}", s(p, "/name"))
                }
                None => "<none>".into(),
            };
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/controller")),
                json!(parameters),
                age(v, now),
            ])
        },
    };
}
