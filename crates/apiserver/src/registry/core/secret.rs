//! Secret (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef};
use crate::registry::catalog::{Phase, Strategy};
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

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        merge_string_data(obj);
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).legacy(obj)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("", "Secret")
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
