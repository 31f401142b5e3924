//! ConfigMap (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["cm"], &ConfigMapStrategy);

/// What ConfigMap does differently.
pub struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.config_map(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CONFIG_MAP)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn config_map(&self, e: &mut Errs, o: &Value) {
            if let Some(old) = self.old {
                self.meta_update(e, o, old, true);
                if boolean(old, "immutable") == Some(true) {
                    if boolean(o, "immutable") != Some(true) {
                        e.forbidden("immutable", "field is immutable when `immutable` is set");
                    }
                    for f in ["data", "binaryData"] {
                        if !json_eq(get(o, f), get(old, f)) {
                            e.forbidden(f, "field is immutable when `immutable` is set");
                        }
                    }
                }
            }
            self.meta_create(e, o, NameRule::Subdomain, true);
            let binary = obj(o, "binaryData");
            let mut total = 0usize;
            for (k, v) in obj(o, "data").into_iter().flatten() {
                let p = key("data", k);
                e.each(&p, k, config_map_key_errs(k));
                if binary.is_some_and(|b| b.contains_key(k)) {
                    e.invalid(&p, s(k), "duplicate of key present in binaryData");
                }
                total += v.as_str().map_or(0, str::len);
            }
            for (k, v) in binary.into_iter().flatten() {
                e.each(&key("binaryData", k), k, config_map_key_errs(k));
                total += v.as_str().map_or(0, base64_decoded_len);
            }
            if total > MAX_SECRET_SIZE {
                e.too_long("", MAX_SECRET_SIZE);
            }
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ConfigMaps.
    pub(crate) static CONFIG_MAP: Printer = Printer {
        columns: &[
            NAME,
            string("Data", field("io.k8s.api.core.v1.ConfigMap", "data")),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(map_len(v, "/data") + map_len(v, "/binaryData")),
                age(v, now),
            ])
        },
    };
}
