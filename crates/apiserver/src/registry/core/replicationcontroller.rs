//! ReplicationController (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["rc"], &ReplicationControllerStrategy).in_all();

/// What ReplicationController does differently.
pub struct ReplicationControllerStrategy;

impl Strategy for ReplicationControllerStrategy {
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
        Ctx::new(def, old).check(|v, e| v.replication_controller(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::REPLICATION_CONTROLLER)
    }
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::*;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn replication_controller(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
            let selector = obj(spec, "selector");
            if selector.is_none_or(|m| m.is_empty()) {
                e.required("spec.selector", "");
            }
            e.nonnegative("spec.replicas", int(spec, "replicas"));
            match get(spec, "template") {
                None => e.required("spec.template", ""),
                Some(t) => {
                    let labels = get(t, "metadata").and_then(|m| obj(m, "labels"));
                    if let Some(sel) = selector.filter(|m| !m.is_empty()) {
                        let ok = str_entries(Some(sel)).iter().all(|(k, v)| {
                            labels.and_then(|l| l.get(*k)).and_then(|x| x.as_str()) == Some(*v)
                        });
                        if !ok {
                            e.invalid(
                                "spec.template.metadata.labels",
                                Bad::Json(map_json(labels)),
                                "`selector` does not match template `labels`",
                            );
                        }
                    }
                    pod_template_spec(e, t, "spec.template");
                    replica_template_policy(e, t, "spec.template", "ReplicationController");
                }
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::core::podspec::defaults::pod_template;
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        replication_controller(o, phase);
    }

    pub(crate) fn replication_controller(o: &mut Obj, phase: Phase) {
        let template_labels = o
            .get("spec")
            .and_then(|s| s.get("template"))
            .and_then(|t| t.get("metadata"))
            .and_then(|m| m.get("labels"))
            .filter(|l| l.is_object())
            .cloned();
        if let Some(labels) = template_labels {
            let labels_empty = labels.as_object().is_some_and(Map::is_empty);
            if let Some(spec) = child(o, "spec") {
                if is_empty_coll(spec, "selector") && !labels_empty {
                    spec.insert("selector".into(), labels.clone());
                }
            }
            if !labels_empty {
                if let Some(meta) = child_or_insert(o, "metadata") {
                    if is_empty_coll(meta, "labels") {
                        meta.insert("labels".into(), labels);
                    }
                }
            }
        }
        if let Some(spec) = child(o, "spec") {
            default_ptr(spec, "replicas", json!(1));
            if let Some(t) = child(spec, "template") {
                pod_template(t);
            }
        }
        if phase.create() {
            status_shape(o, &[("replicas", json!(0))]);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// ReplicationControllers (`core/v1`).
    pub(crate) static REPLICATION_CONTROLLER: Printer = Printer {
        columns: &[
            NAME,
            integer(
                "Desired",
                field("io.k8s.api.core.v1.ReplicationControllerSpec", "replicas"),
            ),
            integer(
                "Current",
                field("io.k8s.api.core.v1.ReplicationControllerStatus", "replicas"),
            ),
            integer(
                "Ready",
                field(
                    "io.k8s.api.core.v1.ReplicationControllerStatus",
                    "readyReplicas",
                ),
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            wide(string(
                "Selector",
                field("io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
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
                json!(format_labels(v.pointer("/spec/selector"))),
            ])
        },
    };
}
