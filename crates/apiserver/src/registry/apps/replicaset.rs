//! ReplicaSet (`apps/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `apps/v1` kind.
pub static KIND: Kind = Kind::new(&["rs"], &ReplicaSetStrategy).in_all();

/// What ReplicaSet does differently.
pub struct ReplicaSetStrategy;

impl Strategy for ReplicaSetStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Scale, Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.replica_set(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::REPLICA_SET)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn replica_set(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            e.nonnegative("spec.replicas", int(spec, "replicas"));
            e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
            self.replica_selector_and_template(e, spec, "ReplicaSet");
            self.selector_immutable(e, spec);
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            default_ptr(spec, "replicas", json!(1));
            if let Some(t) = child(spec, "template") {
                crate::registry::core::podspec::defaults::pod_template(t);
            }
        }
        if phase.create() {
            status_shape(o, &[("replicas", json!(0))]);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ReplicaSets (`apps/v1`).
    pub(crate) static REPLICA_SET: Printer = Printer {
        columns: &[
            NAME,
            integer(
                "Desired",
                field("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas"),
            ),
            integer(
                "Current",
                field("io.k8s.api.apps.v1.ReplicaSetStatus", "replicas"),
            ),
            integer(
                "Ready",
                field("io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas"),
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            wide(string(
                "Selector",
                field("io.k8s.api.apps.v1.ReplicaSetSpec", "selector"),
            )),
        ],
        print: |v, now| {
            let (names, images) = containers(template_spec(v));
            Row::of(vec![
                name(v),
                json!(int(v, "/spec/replicas")),
                json!(int(v, "/status/replicas")),
                json!(int(v, "/status/readyReplicas")),
                age(v, now),
                json!(names),
                json!(images),
                json!(format_label_selector(v.pointer("/spec/selector"))),
            ])
        },
    };
}
