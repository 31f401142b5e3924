//! StatefulSet (`apps/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `apps/v1` kind.
pub static KIND: Kind = Kind::new(&["sts"], &StatefulSetStrategy).in_all();

/// What StatefulSet does differently.
pub struct StatefulSetStrategy;

impl Strategy for StatefulSetStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Scale, Subresource::Status]
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
        Ctx::new(def, old).check(|v, e| v.stateful_set(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::STATEFUL_SET)
    }
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::*;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn stateful_set(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Label, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            if let Some(pmp) = st(spec, "podManagementPolicy").filter(|x| !x.is_empty()) {
                if pmp != "OrderedReady" && pmp != "Parallel" {
                    e.invalid(
                        "spec.podManagementPolicy",
                        js(pmp),
                        "must be 'OrderedReady' or 'Parallel'",
                    );
                }
            }
            if let Some(us) = get(spec, "updateStrategy") {
                let ru = get(us, "rollingUpdate");
                match st(us, "type").unwrap_or("") {
                    "" => {}
                    "OnDelete" => {
                        if let Some(ru) = ru {
                            let mut v = Map::new();
                            v.insert(
                                "Partition".into(),
                                Value::from(int(ru, "partition").unwrap_or(0)),
                            );
                            v.insert(
                                "MaxUnavailable".into(),
                                get(ru, "maxUnavailable").cloned().unwrap_or(Value::Null),
                            );
                            e.invalid(
                                "spec.updateStrategy.rollingUpdate",
                                Bad::Json(Value::Object(v)),
                                "only allowed for updateStrategy 'RollingUpdate'",
                            );
                        }
                    }
                    "RollingUpdate" => {
                        if let Some(ru) = ru {
                            let p = "spec.updateStrategy.rollingUpdate";
                            e.nonnegative(&child(p, "partition"), int(ru, "partition"));
                            if let Some(mu) = get(ru, "maxUnavailable") {
                                let mp = child(p, "maxUnavailable");
                                validate_positive_int_or_percent(e, Some(mu), &mp);
                                if int_or_percent_value(Some(mu)) == 0 {
                                    e.invalid(&mp, Bad::Json(intstr_json(Some(mu))), "cannot be 0");
                                }
                                not_more_than_100_percent(e, Some(mu), &mp);
                            }
                        }
                    }
                    other => {
                        let mut v = Map::new();
                        v.insert("Type".into(), Value::from(other));
                        v.insert("RollingUpdate".into(), Value::Null);
                        e.invalid(
                            "spec.updateStrategy",
                            Bad::Json(Value::Object(v)),
                            "must be 'RollingUpdate' or 'OnDelete'",
                        );
                    }
                }
            }
            if let Some(policy) = get(spec, "persistentVolumeClaimRetentionPolicy") {
                for f in ["whenDeleted", "whenScaled"] {
                    let v = st(policy, f).unwrap_or("");
                    if v != "Retain" && v != "Delete" && get(policy, f).is_some() {
                        e.not_supported(
                            &format!("spec.persistentVolumeClaimRetentionPolicy.{f}"),
                            js(v),
                            &["Retain", "Delete"],
                        );
                    }
                }
            }
            e.nonnegative("spec.replicas", int(spec, "replicas"));
            e.nonnegative("spec.minReadySeconds", int(spec, "minReadySeconds"));
            if let Some(ord) = get(spec, "ordinals") {
                e.nonnegative("spec.ordinals.start", int(ord, "start"));
            }
            let sel = get(spec, "selector");
            let mut sel_ok = true;
            match sel {
                None => e.required("spec.selector", ""),
                Some(s) => {
                    sel_ok = validate_label_selector(e, s, "spec.selector");
                    if obj(s, "matchLabels").is_none_or(|m| m.is_empty())
                        && items(s, "matchExpressions").is_empty()
                    {
                        e.invalid(
                            "spec.selector",
                            Bad::Json(selector_json(Some(s))),
                            "empty selector is invalid for statefulset",
                        );
                    }
                }
            }
            let tmpl = get(spec, "template").unwrap_or(&empty);
            if !sel_ok {
                e.invalid("spec.selector", Bad::Json(selector_json(sel)), "");
            } else {
                // Upstream validates only the template's labels and annotations here
                // (ValidatePodTemplateSpecForStatefulSet), note the path `spec.template.labels`.
                template_selector_match(e, &parse_selector(sel), tmpl, "spec.template");
                let tm = get(tmpl, "metadata").unwrap_or(&empty);
                validate_labels(e, obj(tm, "labels"), "spec.template.labels");
                validate_annotations(e, obj(tm, "annotations"), "spec.template.annotations");
            }
            let tspec = get(tmpl, "spec").unwrap_or(&empty);
            if let Some(rp) = st(tspec, "restartPolicy") {
                if rp != "Always" {
                    e.not_supported("spec.template.spec.restartPolicy", js(rp), &["Always"]);
                }
            }
            if get(tspec, "activeDeadlineSeconds").is_some() {
                e.forbidden(
                    "spec.template.spec.activeDeadlineSeconds",
                    "activeDeadlineSeconds in StatefulSet is not Supported",
                );
            }
            if let Some(old) = self.old {
                let old_spec = get(old, "spec").unwrap_or(&empty);
                let mutable = [
                    "replicas",
                    "template",
                    "updateStrategy",
                    "minReadySeconds",
                    "ordinals",
                    "persistentVolumeClaimRetentionPolicy",
                ];
                let strip = |v: &Value| -> Value {
                    let mut m = v.as_object().cloned().unwrap_or_default();
                    for f in mutable {
                        m.remove(f);
                    }
                    Value::Object(m)
                };
                if !json_eq(Some(&strip(spec)), Some(&strip(old_spec))) {
                    e.forbidden(
                        "spec",
                        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                    );
                }
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::core::podspec::defaults::{pod_template, pvc_spec};
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            stateful_set_spec(spec);
        }
        if phase.create() {
            status_shape(
                o,
                &[("replicas", json!(0)), ("availableReplicas", json!(0))],
            );
        }
    }

    pub(crate) fn stateful_set_spec(spec: &mut Obj) {
        default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(us) = child_or_insert(spec, "updateStrategy") {
            if is_empty_str(us, "type") {
                us.insert("type".into(), json!("RollingUpdate"));
                default_ptr(us, "rollingUpdate", json!({}));
            }
            if str_at(us, "type") == "RollingUpdate" {
                if let Some(ru) = child(us, "rollingUpdate") {
                    default_ptr(ru, "partition", json!(0));
                }
            }
        }
        if let Some(p) = child_or_insert(spec, "persistentVolumeClaimRetentionPolicy") {
            default_str(p, "whenDeleted", "Retain");
            default_str(p, "whenScaled", "Retain");
        }
        default_ptr(spec, "replicas", json!(1));
        default_ptr(spec, "revisionHistoryLimit", json!(10));
        if let Some(t) = child(spec, "template") {
            pod_template(t);
        }
        each_obj(spec, "volumeClaimTemplates", |pvc| {
            pvc.insert("apiVersion".into(), json!("v1"));
            pvc.insert("kind".into(), json!("PersistentVolumeClaim"));
            child_or_insert(pvc, "metadata");
            if let Some(s) = child(pvc, "spec") {
                pvc_spec(s);
            }
            if let Some(status) = child_or_insert(pvc, "status") {
                default_str(status, "phase", "Pending");
            }
        });
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// StatefulSets (`apps/v1`).
    pub(crate) static STATEFUL_SET: Printer = Printer {
        columns: &[
            NAME,
            string("Ready", text("Number of the pod with ready state")),
            AGE,
            CONTAINERS,
            IMAGES,
        ],
        print: |v, now| {
            let (names, images) = containers(template_spec(v));
            Row::of(vec![
                name(v),
                json!(format!(
                    "{}/{}",
                    int(v, "/status/readyReplicas"),
                    int(v, "/spec/replicas")
                )),
                age(v, now),
                json!(names),
                json!(images),
            ])
        },
    };
}
