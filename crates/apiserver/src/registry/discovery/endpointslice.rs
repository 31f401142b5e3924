//! EndpointSlice (`discovery.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `discovery.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &EndpointSliceStrategy);

/// What EndpointSlice does differently.
pub struct EndpointSliceStrategy;

impl Strategy for EndpointSliceStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// `endpointSliceStrategy`: anything but metadata, or the labels.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        crate::registry::rest::content_differs(old, new)
            || old.pointer("/metadata/labels") != new.pointer("/metadata/labels")
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
        Some(&printer::ENDPOINT_SLICE)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        each_obj(o, "ports", |p| {
            default_ptr(p, "name", json!(""));
            default_ptr(p, "protocol", json!("TCP"));
        });
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const SLICE: &str = "io.k8s.api.discovery.v1.EndpointSlice";

    /// EndpointSlices.
    pub(crate) static ENDPOINT_SLICE: Printer = Printer {
        columns: &[
            NAME,
            string("AddressType", field(SLICE, "addressType")),
            string("Ports", field(SLICE, "ports")),
            string("Endpoints", field(SLICE, "endpoints")),
            AGE,
        ],
        print: |v, now| {
            let ports = arr(v, "/ports")
                .iter()
                .map(
                    |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                        (Some(n), _) => n.to_string(),
                        (None, Some(Value::String(n))) => n.clone(),
                        _ => "*".into(),
                    },
                )
                .collect();
            let addresses = arr(v, "/endpoints")
                .iter()
                .flat_map(|e| {
                    e.get("addresses")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or(&[])
                })
                .map(|a| a.as_str().unwrap_or("").to_string())
                .collect();
            Row::of(vec![
                name(v),
                json!(s(v, "/addressType")),
                json!(list_with_more(ports)),
                json!(list_with_more(addresses)),
                age(v, now),
            ])
        },
    };
}
