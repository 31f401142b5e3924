//! DaemonSet (`apps/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `apps/v1` kind.
pub static KIND: Kind = Kind::new(&["ds"], &DaemonSetStrategy).in_all();

/// What DaemonSet does differently.
pub struct DaemonSetStrategy;

impl Strategy for DaemonSetStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    /// `daemonSetStrategy.PrepareForCreate`: the status reset, and a template generation
    /// of at least 1.
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), Value::Object(Default::default()));
        }
        let given = template_generation(obj).unwrap_or(0);
        set_template_generation(obj, given.max(1));
    }

    /// `daemonSetStrategy.PrepareForUpdate`: the template generation is the server's,
    /// one more when the template changed.
    fn prepare_for_update(&self, old: &Value, new: &mut Value) {
        let mut g = template_generation(old).unwrap_or(0);
        if old.pointer("/spec/template") != new.pointer("/spec/template") {
            g += 1;
        }
        set_template_generation(new, g);
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.daemon_set(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::DAEMON_SET)
    }
}

/// The annotation apps/v1 carries the internal `spec.templateGeneration` in (upstream's
/// conversion moves it between the two).
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

fn template_generation(obj: &Value) -> Option<i64> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(TEMPLATE_GENERATION))
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
}

fn set_template_generation(obj: &mut Value, g: i64) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(m) = meta.as_object_mut() {
        let ann = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if !ann.is_object() {
            *ann = Value::Object(Default::default());
        }
        if let Some(a) = ann.as_object_mut() {
            a.insert(TEMPLATE_GENERATION.into(), Value::String(g.to_string()));
        }
    }
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::*;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn daemon_set(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let sel = get(spec, "selector");
            let sel_ok = sel.is_none_or(|s| validate_label_selector(e, s, "spec.selector"));
            let tmpl = get(spec, "template").unwrap_or(&empty);
            if sel_ok {
                let labels = get(tmpl, "metadata").and_then(|m| obj(m, "labels"));
                if !selects(&parse_selector(sel), labels) {
                    e.invalid(
                        "spec.template.metadata.labels",
                        Bad::Json(map_json(labels)),
                        "`selector` does not match template `labels`",
                    );
                }
            }
            if let Some(s) = sel {
                if obj(s, "matchLabels").is_none_or(|m| m.is_empty())
                    && items(s, "matchExpressions").is_empty()
                {
                    e.invalid(
                        "spec.selector",
                        Bad::Json(selector_json(Some(s))),
                        "empty selector is invalid for daemonset",
                    );
                }
            }
            pod_template_spec(e, tmpl, "spec.template");
            replica_template_policy(e, tmpl, "spec.template", "DaemonSet");
            e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
            e.nonnegative("spec.templateGeneration", int(spec, "templateGeneration"));
            if let Some(us) = get(spec, "updateStrategy") {
                let p = "spec.updateStrategy";
                match st(us, "type").unwrap_or("") {
                    "OnDelete" => {}
                    "RollingUpdate" => {
                        if let Some(ru) = get(us, "rollingUpdate") {
                            let rp = child(p, "rollingUpdate");
                            let mu =
                                Some(get(ru, "maxUnavailable").unwrap_or(&Value::from(1)).clone());
                            let ms = get(ru, "maxSurge").cloned();
                            let (mup, msp) = (child(&rp, "maxUnavailable"), child(&rp, "maxSurge"));
                            validate_positive_int_or_percent(e, mu.as_ref(), &mup);
                            validate_positive_int_or_percent(e, ms.as_ref(), &msp);
                            not_more_than_100_percent(e, mu.as_ref(), &mup);
                            not_more_than_100_percent(e, ms.as_ref(), &msp);
                            let has_u = int_or_percent_value(mu.as_ref()) != 0;
                            let has_s = int_or_percent_value(ms.as_ref()) != 0;
                            if has_u && has_s {
                                e.invalid(
                                    &msp,
                                    Bad::Json(intstr_json(ms.as_ref())),
                                    "may not be set when maxUnavailable is non-zero",
                                );
                            } else if !has_u && !has_s {
                                e.required(&mup, "cannot be 0 when maxSurge is 0");
                            }
                        }
                    }
                    "" => {}
                    other => {
                        let mut v = Map::new();
                        v.insert("Type".into(), Value::from(other));
                        v.insert("RollingUpdate".into(), Value::Null);
                        e.not_supported(
                            p,
                            Bad::Json(Value::Object(v)),
                            &["RollingUpdate", "OnDelete"],
                        );
                    }
                }
            }
            e.nonnegative(
                "spec.revisionHistoryLimit",
                int(spec, "revisionHistoryLimit"),
            );
            self.selector_immutable(e, spec);
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            if let Some(us) = child_or_insert(spec, "updateStrategy") {
                default_str(us, "type", "RollingUpdate");
                if str_at(us, "type") == "RollingUpdate" {
                    if let Some(ru) = child_or_insert(us, "rollingUpdate") {
                        default_ptr(ru, "maxUnavailable", json!(1));
                        default_ptr(ru, "maxSurge", json!(0));
                    }
                }
            }
            default_ptr(spec, "revisionHistoryLimit", json!(10));
            if let Some(t) = child(spec, "template") {
                crate::registry::core::podspec::defaults::pod_template(t);
            }
        }
        if phase.create() {
            status_shape(
                o,
                &[
                    ("currentNumberScheduled", json!(0)),
                    ("numberMisscheduled", json!(0)),
                    ("desiredNumberScheduled", json!(0)),
                    ("numberReady", json!(0)),
                ],
            );
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const DS_STATUS: &str = "io.k8s.api.apps.v1.DaemonSetStatus";

    /// DaemonSets (`apps/v1`).
    pub(crate) static DAEMON_SET: Printer = Printer {
        columns: &[
            NAME,
            integer("Desired", field(DS_STATUS, "desiredNumberScheduled")),
            integer("Current", field(DS_STATUS, "currentNumberScheduled")),
            integer("Ready", field(DS_STATUS, "numberReady")),
            integer("Up-to-date", field(DS_STATUS, "updatedNumberScheduled")),
            integer("Available", field(DS_STATUS, "numberAvailable")),
            string(
                "Node Selector",
                field("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            wide(string(
                "Selector",
                field("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
            )),
        ],
        print: |v, now| {
            let (names, images) = containers(template_spec(v));
            Row::of(vec![
                name(v),
                json!(int(v, "/status/desiredNumberScheduled")),
                json!(int(v, "/status/currentNumberScheduled")),
                json!(int(v, "/status/numberReady")),
                json!(int(v, "/status/updatedNumberScheduled")),
                json!(int(v, "/status/numberAvailable")),
                json!(format_labels(v.pointer("/spec/template/spec/nodeSelector"))),
                age(v, now),
                json!(names),
                json!(images),
                json!(format_label_selector(v.pointer("/spec/selector"))),
            ])
        },
    };
}
