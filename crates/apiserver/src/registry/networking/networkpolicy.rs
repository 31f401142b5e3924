//! NetworkPolicy (`networking.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `networking.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["netpol"], &NetworkPolicyStrategy);

/// What NetworkPolicy does differently.
pub struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
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
        Some(&printer::NETWORK_POLICY)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        let Some(spec) = child(o, "spec") else { return };
        child_or_insert(spec, "podSelector");
        for dir in ["ingress", "egress"] {
            each_obj(spec, dir, |rule| {
                each_obj(rule, "ports", |p| default_ptr(p, "protocol", json!("TCP")));
            });
        }
        if is_empty_coll(spec, "policyTypes") {
            let mut types = vec![json!("Ingress")];
            if !is_empty_coll(spec, "egress") {
                types.push(json!("Egress"));
            }
            spec.insert("policyTypes".into(), Value::Array(types));
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// NetworkPolicies.
    pub(crate) static NETWORK_POLICY: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Pod-Selector",
                field("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
            ),
            AGE,
        ],
        print: |v, now| {
            // a missing podSelector is the empty selector in the Go struct, not nil
            let selector = v.pointer("/spec/podSelector").cloned().unwrap_or(json!({}));
            Row::of(vec![
                name(v),
                json!(format_label_selector(Some(&selector))),
                age(v, now),
            ])
        },
    };
}
