//! DeviceClass (`resource.k8s.io/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `resource.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &DeviceClassStrategy);

/// What DeviceClass does differently.
pub struct DeviceClassStrategy;

impl Strategy for DeviceClassStrategy {
    /// `deviceClassStrategy`: 1 at create, bumped when the spec changes.
    fn uses_generation(&self) -> bool {
        true
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.device_class(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::DEVICE_CLASS)
    }
}

pub(crate) mod validation {
    use crate::registry::resource::validation as dra;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        /// `ValidateDeviceClass` / `ValidateDeviceClassUpdate`.
        pub(crate) fn device_class(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let old_spec = self.old.map(|old| get(old, "spec").unwrap_or(&empty));
            // unchanged selectors and configs of a stored class are not checked again
            let stored_selectors =
                old_spec.is_some_and(|os| json_eq(get(spec, "selectors"), get(os, "selectors")));
            dra::selectors(
                e,
                items(spec, "selectors"),
                "spec.selectors",
                stored_selectors,
            );
            let stored_config =
                old_spec.is_some_and(|os| json_eq(get(spec, "config"), get(os, "config")));
            let configs = items(spec, "config");
            if configs.len() > dra::MAX_CONFIGS {
                e.too_many("spec.config", configs.len() as i64, dra::MAX_CONFIGS as i64);
            } else if !stored_config {
                for (i, c) in configs.iter().enumerate() {
                    dra::device_configuration(e, c, &index("spec.config", i));
                }
            }
            if let Some(name) = st(spec, "extendedResourceName") {
                if !is_extended_resource_name(name) {
                    e.invalid(
                        "spec.extendedResourceName",
                        s(name),
                        "must be a valid extended resource name",
                    );
                }
            }
        }
    }

    /// `v1helper.IsExtendedResourceName`: a qualified name outside `kubernetes.io`, not
    /// `requests.`-prefixed, that is valid with `requests.` in front.
    fn is_extended_resource_name(name: &str) -> bool {
        let native = !name.contains('/') || name.contains("kubernetes.io/");
        if native || name.starts_with("requests.") {
            return false;
        }
        qualified_name_errs(&format!("requests.{name}")).is_empty()
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// DeviceClasses.
    pub(crate) static DEVICE_CLASS: Printer = Printer {
        columns: &[NAME, AGE],
        print: |v, now| Row::of(vec![name(v), age(v, now)]),
    };
}
