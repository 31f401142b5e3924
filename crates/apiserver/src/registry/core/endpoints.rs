//! Endpoints (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["ep"], &EndpointsStrategy);

/// What Endpoints does differently.
pub struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    /// Deprecated since 1.33 (KEP-4974), with EndpointSlice as the replacement.
    fn deprecation_warning(&self) -> Option<&'static str> {
        Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::ENDPOINTS)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        each_obj(o, "subsets", |ss| {
            each_obj(ss, "ports", |p| default_str(p, "protocol", "TCP"));
        });
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    pub(crate) fn format_endpoints(v: &Value) -> String {
        let subsets = arr(v, "/subsets");
        if subsets.is_empty() {
            return "<none>".into();
        }
        const MAX: usize = 3;
        let mut list: Vec<String> = Vec::new();
        let mut more = false;
        let mut count = 0usize;
        for ss in subsets {
            let addresses = ss
                .get("addresses")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let ip = |a: &Value| {
                a.get("ip")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let ports = ss
                .get("ports")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            if ports.is_empty() {
                // headless services may have no ports
                count += addresses.len();
                for a in addresses {
                    if list.len() == MAX {
                        more = true;
                        break;
                    }
                    list.push(ip(a));
                }
                continue;
            }
            for port in ports {
                let p = port.get("port").and_then(Value::as_i64).unwrap_or(0);
                count += addresses.len();
                for a in addresses {
                    if list.len() == MAX {
                        more = true;
                        break;
                    }
                    let host = ip(a);
                    list.push(if host.contains(':') {
                        format!("[{host}]:{p}")
                    } else {
                        format!("{host}:{p}")
                    });
                }
            }
        }
        let joined = list.join(",");
        if more {
            format!("{joined} + {} more...", count - MAX)
        } else {
            joined
        }
    }

    /// Endpoints.
    pub(crate) static ENDPOINTS: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Endpoints",
                field("io.k8s.api.core.v1.Endpoints", "subsets"),
            ),
            AGE,
        ],
        print: |v, now| Row::of(vec![name(v), json!(format_endpoints(v)), age(v, now)]),
    };
}
