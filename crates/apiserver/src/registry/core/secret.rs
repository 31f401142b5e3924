//! Secret (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&[], &SecretStrategy);

/// What Secret does differently.
pub struct SecretStrategy;

impl Strategy for SecretStrategy {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["type"]
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        merge_string_data(obj);
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.secret(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::SECRET)
    }
}

/// A Secret's `stringData` is write-only: its entries are base64-encoded into `data`
/// (overwriting keys there) and the field is dropped, as upstream's v1 → internal
/// conversion does on every write.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    let Some(string_data) = o.remove("stringData") else {
        return;
    };
    let Some(entries) = string_data.as_object() else {
        return;
    };
    if entries.is_empty() {
        return;
    }
    let data = o
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Some(d) = data.as_object_mut() {
        for (k, v) in entries {
            let text = v.as_str().unwrap_or_default();
            d.insert(
                k.clone(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_data_is_merged_into_data_and_dropped() {
        let mut s =
            json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "new", "c": "z"}});
        merge_string_data(&mut s);
        assert_eq!(s, json!({"data": {"a": "eA==", "b": "bmV3", "c": "eg=="}}));
        let mut only = json!({"stringData": {"k": "v"}});
        merge_string_data(&mut only);
        assert_eq!(only, json!({"data": {"k": "dg=="}}));
        let mut empty = json!({"stringData": {}});
        merge_string_data(&mut empty);
        assert_eq!(empty, json!({}));
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn secret(&self, e: &mut Errs, o: &Value) {
            let ty = st(o, "type").unwrap_or("Opaque");
            if let Some(old) = self.old {
                self.meta_update(e, o, old, true);
                let old_ty = st(old, "type").unwrap_or("Opaque");
                if ty != old_ty {
                    e.invalid("type", js(ty), IMMUTABLE);
                }
                if boolean(old, "immutable") == Some(true) {
                    if boolean(o, "immutable") != Some(true) {
                        e.forbidden("immutable", "field is immutable when `immutable` is set");
                    }
                    if !json_eq(get(o, "data"), get(old, "data")) {
                        e.forbidden("data", "field is immutable when `immutable` is set");
                    }
                }
            }
            self.meta_create(e, o, NameRule::Subdomain, true);
            // stringData is merged into data by conversion before validation upstream.
            let mut keys: Vec<&str> = Vec::new();
            let mut total = 0usize;
            for (k, v) in obj(o, "data").into_iter().flatten() {
                keys.push(k);
                total += v.as_str().map_or(0, base64_decoded_len);
            }
            for (k, v) in obj(o, "stringData").into_iter().flatten() {
                if !keys.contains(&k.as_str()) {
                    keys.push(k);
                }
                total += v.as_str().map_or(0, str::len);
            }
            for k in &keys {
                e.each(&key("data", k), k, config_map_key_errs(k));
            }
            if total > MAX_SECRET_SIZE {
                e.too_long("data", MAX_SECRET_SIZE);
            }
            let has = |k: &str| keys.contains(&k);
            let meta = get(o, "metadata");
            match ty {
                "kubernetes.io/service-account-token" => {
                    let sa = meta
                        .and_then(|m| obj(m, "annotations"))
                        .and_then(|a| a.get("kubernetes.io/service-account.name"))
                        .and_then(|v| v.as_str())
                        .unwrap_or("");
                    if sa.is_empty() {
                        e.required(
                            "metadata.annotations[kubernetes.io/service-account.name]",
                            "",
                        );
                    }
                }
                "kubernetes.io/dockercfg" if !has(".dockercfg") => {
                    e.required("data[.dockercfg]", "")
                }
                "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
                    e.required("data[.dockerconfigjson]", "")
                }
                "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
                    e.required("data[username]", "");
                    e.required("data[password]", "");
                }
                "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
                    e.required("data[ssh-privatekey]", "")
                }
                "kubernetes.io/tls" => {
                    if !has("tls.crt") {
                        e.required("data[tls.crt]", "");
                    }
                    if !has("tls.key") {
                        e.required("data[tls.key]", "");
                    }
                }
                _ => {}
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        default_str(o, "type", "Opaque");
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// Secrets.
    pub(crate) static SECRET: Printer = Printer {
        columns: &[
            NAME,
            string("Type", field("io.k8s.api.core.v1.Secret", "type")),
            string("Data", field("io.k8s.api.core.v1.Secret", "data")),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(s(v, "/type")),
                json!(map_len(v, "/data")),
                age(v, now),
            ])
        },
    };
}
