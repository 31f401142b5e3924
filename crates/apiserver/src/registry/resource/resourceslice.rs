//! ResourceSlice (`resource.k8s.io/v1`): what it does differently from the generic
//! store: field selectors on `spec.nodeName` and `spec.driver`, and the pool, driver
//! and node of a slice are immutable.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `resource.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ResourceSliceStrategy);

/// What ResourceSlice does differently.
pub struct ResourceSliceStrategy;

impl Strategy for ResourceSliceStrategy {
    /// `resourceslice.ToSelectableFields`.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.nodeName", "spec.driver"]
    }

    /// `resourceSliceStrategy`: 1 at create, bumped when the spec changes.
    fn uses_generation(&self) -> bool {
        true
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.resource_slice(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::RESOURCE_SLICE)
    }
}

pub(crate) mod validation {
    use crate::registry::resource::validation as dra;
    use crate::registry::validation::prelude::*;

    const ONE_OF: &str = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";

    impl Ctx<'_> {
        /// `ValidateResourceSlice` / `ValidateResourceSliceUpdate`.
        pub(crate) fn resource_slice(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let driver = st(spec, "driver").unwrap_or("");
            dra::driver_name(e, driver, "spec.driver");
            let pool = get(spec, "pool").unwrap_or(&empty);
            dra::pool_name(e, st(pool, "name").unwrap_or(""), "spec.pool.name");
            let count = int(pool, "resourceSliceCount").unwrap_or(0);
            if count <= 0 {
                e.invalid(
                    "spec.pool.resourceSliceCount",
                    Bad::Int(count),
                    "must be greater than zero",
                );
            }
            let generation = int(pool, "generation").unwrap_or(0);
            if generation < 0 {
                e.invalid(
                    "spec.pool.generation",
                    Bad::Int(generation),
                    "must be greater than or equal to zero",
                );
            }
            if let Some(old) = self.old {
                let old_spec = get(old, "spec").unwrap_or(&empty);
                let old_pool = get(old_spec, "pool").unwrap_or(&empty);
                let (name, old_name) = (
                    st(pool, "name").unwrap_or(""),
                    st(old_pool, "name").unwrap_or(""),
                );
                if name != old_name {
                    e.invalid("spec.pool.name", s(name), IMMUTABLE);
                }
                if driver != st(old_spec, "driver").unwrap_or("") {
                    e.invalid("spec.driver", s(driver), IMMUTABLE);
                }
                if !json_eq(get(spec, "nodeName"), get(old_spec, "nodeName")) {
                    e.invalid(
                        "spec.nodeName",
                        Bad::Json(get(spec, "nodeName").cloned().unwrap_or(Value::Null)),
                        IMMUTABLE,
                    );
                }
            }
            let mut set = Vec::new();
            if let Some(node) = st(spec, "nodeName") {
                if node.is_empty() {
                    e.invalid(
                        "spec.nodeName",
                        s(node),
                        "must be either unset or set to a non-empty string",
                    );
                } else {
                    set.push("`nodeName`");
                    e.each(
                        "spec.nodeName",
                        node,
                        NameRule::Subdomain.check(node, false),
                    );
                }
            }
            if let Some(sel) = get(spec, "nodeSelector") {
                set.push("`nodeSelector`");
                let terms = items(sel, "nodeSelectorTerms");
                if terms.len() != 1 {
                    e.invalid(
                        "spec.nodeSelector.nodeSelectorTerms",
                        Bad::Json(Value::Array(terms.to_vec())),
                        "must have exactly one node selector term",
                    );
                }
            }
            for f in ["allNodes", "perDeviceNodeSelection"] {
                match boolean(spec, f) {
                    Some(true) => set.push(if f == "allNodes" {
                        "`allNodes`"
                    } else {
                        "`perDeviceNodeSelection`"
                    }),
                    Some(false) => e.invalid(
                        &child("spec", f),
                        Bad::Bool(false),
                        "must be either unset or set to true",
                    ),
                    None => {}
                }
            }
            match set.len() {
                0 => e.required("spec", ONE_OF),
                1 => {}
                _ => e.invalid(
                    "spec",
                    s(&format!("{{{}}}", set.join(", "))),
                    &format!("{ONE_OF}, but multiple fields are set"),
                ),
            }
            if get(spec, "sharedCounters").is_some() && get(spec, "devices").is_some() {
                e.invalid(
                    "spec",
                    s(""),
                    "only one of `sharedCounters` or `devices` is allowed",
                );
            }
            let devices = items(spec, "devices");
            let advanced = devices.iter().any(|d| {
                !items(d, "taints").is_empty() || !items(d, "consumesCounters").is_empty()
            });
            let max = if advanced {
                dra::MAX_DEVICES_ADVANCED
            } else {
                dra::MAX_DEVICES
            };
            if devices.len() > max {
                e.too_many("spec.devices", devices.len() as i64, max as i64);
                return;
            }
            let mut seen: Vec<&str> = Vec::new();
            for (i, d) in devices.iter().enumerate() {
                let p = index("spec.devices", i);
                let name = st(d, "name").unwrap_or("");
                if seen.contains(&name) {
                    e.duplicate(&p, Bad::Json(d.clone()));
                    continue;
                }
                seen.push(name);
                dra::label_name(e, name, &child(&p, "name"));
                let attrs = obj(d, "attributes");
                let caps = obj(d, "capacity");
                let total = attrs.map_or(0, Map::len) + caps.map_or(0, Map::len);
                if total > dra::MAX_ATTRIBUTES_AND_CAPACITIES {
                    e.invalid(
                        &p,
                        Bad::Int(total as i64),
                        &format!(
                            "the total number of attributes and capacities must not exceed {}",
                            dra::MAX_ATTRIBUTES_AND_CAPACITIES
                        ),
                    );
                }
                for (k, v) in sorted(attrs) {
                    let kp = key(&child(&p, "attributes"), k);
                    dra::qualified_key(e, k, &kp);
                    dra::device_attribute(e, v, &kp);
                }
                let multi = boolean(d, "allowMultipleAllocations") == Some(true);
                for (k, v) in sorted(caps) {
                    let kp = key(&child(&p, "capacity"), k);
                    dra::qualified_key(e, k, &kp);
                    if get(v, "value").is_none() {
                        e.required(&child(&kp, "value"), "");
                    }
                    if !multi && get(v, "requestPolicy").is_some() {
                        e.forbidden(
                            &child(&kp, "requestPolicy"),
                            "allowMultipleAllocations must be true",
                        );
                    }
                }
                // taints, unless they are as stored
                let old_device = self.old.and_then(|o| {
                    o.pointer("/spec/devices")
                        .and_then(Value::as_array)?
                        .iter()
                        .find(|od| st(od, "name") == Some(name))
                });
                let taints = items(d, "taints");
                if old_device.is_none_or(|od| !json_eq(get(od, "taints"), get(d, "taints"))) {
                    let tp = child(&p, "taints");
                    if taints.len() > dra::MAX_TAINTS {
                        e.too_many(&tp, taints.len() as i64, dra::MAX_TAINTS as i64);
                    } else {
                        for (j, t) in taints.iter().enumerate() {
                            dra::device_taint(e, t, &index(&tp, j));
                        }
                    }
                }
                per_device_node(e, spec, d, &p);
            }
        }
    }

    /// A map's entries by key (Go's map order is random; sorted answers are stable).
    fn sorted(m: Option<&Map<String, Value>>) -> Vec<(&String, &Value)> {
        let mut v: Vec<(&String, &Value)> = m.into_iter().flatten().collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// The node fields of a device: only with `perDeviceNodeSelection`, then exactly one.
    fn per_device_node(e: &mut Errs, spec: &Value, d: &Value, p: &str) {
        const ONE: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
        if boolean(spec, "perDeviceNodeSelection") == Some(true) {
            let mut set = Vec::new();
            if let Some(n) = st(d, "nodeName") {
                if n.is_empty() {
                    e.invalid(&child(p, "nodeName"), s(n), "must not be empty");
                } else {
                    set.push("`nodeName`");
                    e.each(
                        &child(p, "nodeName"),
                        n,
                        NameRule::Subdomain.check(n, false),
                    );
                }
            }
            if get(d, "nodeSelector").is_some() {
                set.push("`nodeSelector`");
            }
            match boolean(d, "allNodes") {
                Some(true) => set.push("`allNodes`"),
                Some(false) => e.invalid(
                    &child(p, "allNodes"),
                    Bad::Bool(false),
                    "must be either unset or set to true",
                ),
                None => {}
            }
            match set.len() {
                0 => e.required(p, ONE),
                1 => {}
                _ => e.invalid(p, s(&format!("{{{}}}", set.join(", "))), ONE),
            }
        } else if ["nodeName", "nodeSelector", "allNodes"]
            .iter()
            .any(|f| get(d, f).is_some())
        {
            e.invalid(
                p,
                Bad::Unstructured(Value::Null),
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            );
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const SPEC: &str = "io.k8s.api.resource.v1.ResourceSliceSpec";

    /// ResourceSlices.
    pub(crate) static RESOURCE_SLICE: Printer = Printer {
        columns: &[
            NAME,
            string("Node", field(SPEC, "nodeName")),
            string("Driver", field(SPEC, "driver")),
            string("Pool", field("io.k8s.api.resource.v1.ResourcePool", "name")),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                v.pointer("/spec/nodeName").cloned().unwrap_or(Value::Null),
                json!(s(v, "/spec/driver")),
                json!(s(v, "/spec/pool/name")),
                age(v, now),
            ])
        },
    };
}
