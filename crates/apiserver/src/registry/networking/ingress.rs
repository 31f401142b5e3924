//! Ingress (`networking.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `networking.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["ing"], &IngressStrategy);

/// What Ingress does differently.
pub struct IngressStrategy;

impl Strategy for IngressStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

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
        Some(&printer::INGRESS)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if phase.create() {
            status_shape(o, &[("loadBalancer", json!({}))]);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    fn ingress_hosts(v: &Value) -> String {
        const MAX: usize = 3;
        let rules = arr(v, "/spec/rules");
        // upstream stops collecting once three hosts are listed and then there are more rules
        let mut list = Vec::new();
        let mut more = false;
        for r in rules {
            if list.len() == MAX {
                more = true;
            }
            if let Some(h) = r.get("host").and_then(Value::as_str) {
                if !more && !h.is_empty() {
                    list.push(h);
                }
            }
        }
        if list.is_empty() {
            return "*".into();
        }
        let joined = list.join(",");
        if more {
            format!("{joined} + {} more...", rules.len() - MAX)
        } else {
            joined
        }
    }

    /// Ingresses.
    pub(crate) static INGRESS: Printer = Printer {
        columns: &[
            NAME,
            string("Class", text("The name of the IngressClass resource that should be used for additional configuration")),
            string("Hosts", text("Hosts that incoming requests are matched against before the ingress rule")),
            string("Address", text("Address is a list containing ingress points for the load-balancer")),
            string("Ports", text("Ports of TLS configurations that open")),
            AGE,
        ],
        print: |v, now| {
            let ports = if arr(v, "/spec/tls").is_empty() {
                "80"
            } else {
                "80, 443"
            };
            Row::of(vec![
                name(v),
                json!(opt_s(v, "/spec/ingressClassName").unwrap_or("<none>")),
                json!(ingress_hosts(v)),
                json!(load_balancer_ingress(
                    v,
                    "/status/loadBalancer/ingress"
                )),
                json!(ports),
                age(v, now),
            ])
        },
    };
}
