//! LimitRange (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["limits"], &LimitRangeStrategy);

/// What LimitRange does differently.
pub struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        let _ = phase;
        if let Some(spec) = child(o, "spec") {
            each_obj(spec, "limits", limit_range_item);
        }
    }

    pub(crate) fn limit_range_item(item: &mut Obj) {
        if str_at(item, "type") == "Container" {
            let max = item.get("max").and_then(Value::as_object).cloned();
            let min = item.get("min").and_then(Value::as_object).cloned();
            let mut default = match item.get("default") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(_) => return,
            };
            let mut default_request = match item.get("defaultRequest") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(_) => return,
            };
            for (k, v) in max.iter().flatten() {
                if !default.contains_key(k) {
                    default.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in &default {
                if !default_request.contains_key(k) {
                    default_request.insert(k.clone(), v.clone());
                }
            }
            for (k, v) in min.iter().flatten() {
                if !default_request.contains_key(k) {
                    default_request.insert(k.clone(), v.clone());
                }
            }
            if !default.is_empty() {
                item.insert("default".into(), Value::Object(default));
            }
            if !default_request.is_empty() {
                item.insert("defaultRequest".into(), Value::Object(default_request));
            }
        }
        for key in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            resource_list(item, key, true);
        }
    }
}

pub mod admission;
