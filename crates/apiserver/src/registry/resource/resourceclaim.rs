//! ResourceClaim (`resource.k8s.io/v1`): what it does differently from the generic
//! store: an immutable spec, a status written through `/status` whose allocation is
//! immutable once set.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `resource.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ResourceClaimStrategy);

/// What ResourceClaim does differently.
pub struct ResourceClaimStrategy;

impl Strategy for ResourceClaimStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            crate::registry::resource::defaults::device_claim(spec);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.resource_claim(e, obj))
    }

    /// `resourceclaimStatusStrategy.ValidateUpdate`.
    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        _sub: Subresource,
        obj: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        Ctx::new(def, Some(old)).check(|v, e| {
            v.meta(e, obj, apimachinery::names::NameRule::Subdomain, false);
            crate::registry::resource::validation::claim_status(e, obj, old);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::RESOURCE_CLAIM)
    }
}

pub(crate) mod validation {
    use crate::registry::resource::validation as dra;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        /// `ValidateResourceClaim` / `ValidateResourceClaimUpdate` (the spec is
        /// immutable).
        pub(crate) fn resource_claim(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            if let Some(old) = self.old {
                if !json_eq(Some(spec), get(old, "spec")) {
                    e.invalid("spec", Bad::Json(spec.clone()), IMMUTABLE);
                }
                return;
            }
            let devices = get(spec, "devices").unwrap_or(&empty);
            dra::device_claim(e, devices, "spec.devices", false);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ResourceClaims: `State` sums up deletion, allocation and reservation.
    pub(crate) static RESOURCE_CLAIM: Printer = Printer {
        columns: &[
            NAME,
            string(
                "State",
                text("A summary of the current state (allocated, pending, reserved, etc.)."),
            ),
            AGE,
        ],
        print: |v, now| Row::of(vec![name(v), json!(state(v)), age(v, now)]),
    };

    /// `resourceClaimState`.
    pub(crate) fn state(v: &Value) -> String {
        let mut states = Vec::new();
        let deleted = opt_s(v, "/metadata/deletionTimestamp").is_some();
        if deleted {
            states.push("deleted");
        }
        if v.pointer("/status/allocation").is_none_or(Value::is_null) {
            if !deleted {
                states.push("pending");
            }
        } else {
            states.push("allocated");
            if !arr(v, "/status/reservedFor").is_empty() {
                states.push("reserved");
            }
        }
        states.join(",")
    }
}
