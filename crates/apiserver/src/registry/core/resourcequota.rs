//! ResourceQuota (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

pub(crate) mod admission;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["quota"], &ResourceQuotaStrategy);

/// What ResourceQuota does differently.
pub struct ResourceQuotaStrategy;

impl Strategy for ResourceQuotaStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
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
        Some(&printer::RESOURCE_QUOTA)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            resource_list(spec, "hard", true);
        }
        if let Some(status) = child(o, "status") {
            resource_list(status, "hard", true);
            resource_list(status, "used", true);
        }
        if phase.create() {
            status_shape(o, &[]);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    pub(crate) fn quota_columns(v: &Value) -> (String, String) {
        let Some(hard) = v.pointer("/status/hard").and_then(Value::as_object) else {
            return (String::new(), String::new());
        };
        let mut names: Vec<&String> = hard.keys().collect();
        names.sort();
        let mut requests = Vec::new();
        let mut limits = Vec::new();
        for resource in names {
            let used = v
                .pointer("/status/used")
                .and_then(|u| u.get(resource.as_str()))
                .map(crate::registry::table::int_or_string)
                .unwrap_or_else(|| "0".into());
            let entry = format!(
                "{resource}: {used}/{}",
                crate::registry::table::int_or_string(&hard[resource.as_str()])
            );
            let mut pieces = resource.split('.');
            let is_limit = pieces.next() == Some("limits") && pieces.next().is_some();
            if is_limit {
                limits.push(entry);
            } else {
                requests.push(entry);
            }
        }
        (requests.join(", "), limits.join(", "))
    }

    /// ResourceQuotas.
    pub(crate) static RESOURCE_QUOTA: Printer = Printer {
        columns: &[
            NAME,
            string(
                "Request",
                text("Request represents a minimum amount of cpu/memory that a container may consume."),
            ),
            string("Limit", text("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.")),
            AGE,
        ],
        print: |v, now| {
            let (requests, limits) = quota_columns(v);
            Row::of(vec![name(v), json!(requests), json!(limits), age(v, now)])
        },
    };
}
