//! Lease (`coordination.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `coordination.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &LeaseStrategy);

/// What Lease does differently.
pub struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.lease(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::LEASE)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn lease(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            if let Some(d) = int(spec, "leaseDurationSeconds").filter(|d| *d <= 0) {
                e.invalid(
                    "spec.leaseDurationSeconds",
                    Bad::Int(d),
                    "must be greater than 0",
                );
            }
            if let Some(t) = int(spec, "leaseTransitions").filter(|t| *t < 0) {
                e.invalid(
                    "spec.leaseTransitions",
                    Bad::Int(t),
                    "must be greater than or equal to 0",
                );
            }
            let strategy = st(spec, "strategy");
            if let Some(sv) = strategy {
                if !sv.contains('/') {
                    if sv != "OldestEmulationVersion" {
                        e.not_supported(
                            "spec.strategy.strategy",
                            js(sv),
                            &["OldestEmulationVersion"],
                        );
                    }
                } else {
                    for m in qualified_name_errs(sv) {
                        e.invalid("spec.strategy.strategy", js(sv), &m);
                    }
                }
            }
            if st(spec, "preferredHolder").is_some_and(|p| !p.is_empty())
                && strategy.is_none_or(|s| s.is_empty())
            {
                e.forbidden(
                    "spec.preferredHolder",
                    "may only be specified if `strategy` is defined",
                );
            }
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// Leases.
    pub(crate) static LEASE: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Holder",
                field("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
            ),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/holderIdentity")),
                age(v, now),
            ])
        },
    };
}
