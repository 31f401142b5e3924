//! Job (`batch/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `batch/v1` kind.
pub static KIND: Kind = Kind::new(&[], &JobStrategy).in_all();

/// What Job does differently.
pub struct JobStrategy;

impl Strategy for JobStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.successful"]
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
        if phase.create() {
            // the selector names the Job's uid, set just before the create defaults
            let uid = crate::registry::rest::meta_str(obj, "uid")
                .unwrap_or("")
                .to_string();
            defaults::generate_job_selector(obj, &uid);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.job(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::JOB)
    }
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::*;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn job(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let meta = get(o, "metadata").unwrap_or(&empty);
            let manual = boolean(spec, "manualSelector") == Some(true);
            let uid = st(meta, "uid").unwrap_or("");
            let name = st(meta, "name").unwrap_or("");
            // validateGeneratedSelector: only meaningful once the server generated the selector.
            let generated = get(spec, "selector")
                .and_then(|s| obj(s, "matchLabels"))
                .is_some_and(|m| {
                    m.contains_key("controller-uid")
                        || m.contains_key("batch.kubernetes.io/controller-uid")
                });
            if self.old.is_none() && !manual && generated && !uid.is_empty() {
                let tmeta = get(spec, "template")
                    .and_then(|t| get(t, "metadata"))
                    .unwrap_or(&empty);
                let labels = obj(tmeta, "labels");
                for (k, want) in [
                    ("controller-uid", uid),
                    ("job-name", name),
                    ("batch.kubernetes.io/controller-uid", uid),
                    ("batch.kubernetes.io/job-name", name),
                ] {
                    let p = key("spec.template.metadata.labels", k);
                    match labels.and_then(|l| l.get(k)) {
                        None => e.required(&p, &format!("must be '{want}'")),
                        Some(v) if v.as_str() != Some(want) => e.invalid(
                            &p,
                            Bad::Json(map_json(labels)),
                            &format!("must be '{want}'"),
                        ),
                        _ => {}
                    }
                }
            }
            job_spec(e, spec, "spec");
            let sel = get(spec, "selector");
            let mut sel_ok = true;
            match sel {
                // The registry generates the selector unless manualSelector is set.
                None if manual => e.required("spec.selector", ""),
                None => sel_ok = false,
                Some(s) => sel_ok = validate_label_selector(e, s, "spec.selector"),
            }
            if sel_ok {
                let tmpl = get(spec, "template").unwrap_or(&empty);
                let labels = get(tmpl, "metadata").and_then(|m| obj(m, "labels"));
                if !selects(&parse_selector(sel), labels) {
                    e.invalid(
                        "spec.template.metadata.labels",
                        Bad::Json(map_json(labels)),
                        "`selector` does not match template `labels`",
                    );
                }
            }
            if let Some(old) = self.old {
                let old_spec = get(old, "spec").unwrap_or(&empty);
                if !json_eq(get(spec, "completions"), get(old_spec, "completions")) {
                    let v = get(spec, "completions").cloned().unwrap_or(Value::Null);
                    e.invalid("spec.completions", Bad::Json(v), IMMUTABLE);
                }
                if !json_eq(sel, get(old_spec, "selector")) {
                    e.invalid("spec.selector", Bad::Json(selector_json(sel)), IMMUTABLE);
                }
                let suspended_never_started = boolean(spec, "suspend") == Some(true)
                    && get(old, "status")
                        .and_then(|s| get(s, "startTime"))
                        .is_none();
                if !suspended_never_started
                    && !json_eq(get(spec, "template"), get(old_spec, "template"))
                {
                    let v = get(spec, "template").cloned().unwrap_or(Value::Null);
                    e.invalid("spec.template", Bad::Json(v), IMMUTABLE);
                }
                for f in [
                    "completionMode",
                    "podFailurePolicy",
                    "backoffLimitPerIndex",
                    "managedBy",
                    "successPolicy",
                ] {
                    if !json_eq(get(spec, f), get(old_spec, f)) {
                        let v = get(spec, f).cloned().unwrap_or(Value::Null);
                        e.invalid(&child("spec", f), Bad::Json(v), IMMUTABLE);
                    }
                }
            } else if let Some(c) = int(spec, "completions").filter(|c| *c > 0) {
                if st(spec, "completionMode") == Some("Indexed") {
                    let host = format!("{name}-{}", c - 1);
                    if !dns1123_label_errs(&host).is_empty() {
                        e.invalid(
                            "metadata.name",
                            s(name),
                            &format!("will not able to create pod with invalid DNS label: {host}"),
                        );
                    }
                }
            }
        }
    }

    /// `validateJobSpec` (the part shared by Job and CronJob templates).
    pub(crate) fn job_spec(e: &mut Errs, spec: &Value, path: &str) {
        for f in [
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
            "backoffLimitPerIndex",
            "maxFailedIndexes",
        ] {
            e.nonnegative(&child(path, f), int(spec, f));
        }
        if get(spec, "maxFailedIndexes").is_some() && get(spec, "backoffLimitPerIndex").is_none() {
            e.required(
                &child(path, "backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            );
        }
        let mode = st(spec, "completionMode");
        if let Some(m) = mode {
            if m != "NonIndexed" && m != "Indexed" {
                e.not_supported(
                    &child(path, "completionMode"),
                    js(m),
                    &["NonIndexed", "Indexed"],
                );
            }
            if m == "Indexed" && get(spec, "completions").is_none() {
                e.required(
                    &child(path, "completions"),
                    "when completion mode is Indexed",
                );
            }
        }
        if mode.is_none_or(|m| m == "NonIndexed") {
            if let Some(b) = int(spec, "backoffLimitPerIndex") {
                e.invalid(
                    &child(path, "backoffLimitPerIndex"),
                    Bad::Int(b),
                    "requires indexed completion mode",
                );
            }
            if let Some(b) = int(spec, "maxFailedIndexes") {
                e.invalid(
                    &child(path, "maxFailedIndexes"),
                    Bad::Int(b),
                    "requires indexed completion mode",
                );
            }
        }
        if let Some(p) = st(spec, "podReplacementPolicy") {
            if get(spec, "podFailurePolicy").is_some() {
                if p != "Failed" {
                    e.not_supported(&child(path, "podReplacementPolicy"), js(p), &["Failed"]);
                }
            } else if p != "Failed" && p != "TerminatingOrFailed" {
                e.not_supported(
                    &child(path, "podReplacementPolicy"),
                    js(p),
                    &["Failed", "TerminatingOrFailed"],
                );
            }
        }
        let empty = Value::Object(Map::new());
        let tmpl = get(spec, "template").unwrap_or(&empty);
        let tp = child(path, "template");
        pod_template_spec(e, tmpl, &tp);
        let rp = get(tmpl, "spec")
            .and_then(|s| st(s, "restartPolicy"))
            .unwrap_or("");
        let rpp = format!("{tp}.spec.restartPolicy");
        if rp == "Always" || rp.is_empty() {
            e.required(&rpp, "valid values: \"OnFailure\", \"Never\"");
        } else if rp != "OnFailure" && rp != "Never" {
            e.not_supported(&rpp, js(rp), &["OnFailure", "Never"]);
        } else if get(spec, "podFailurePolicy").is_some() && rp != "Never" {
            e.invalid(
                &rpp,
                js(rp),
                "only \"Never\" is supported when podFailurePolicy is specified",
            );
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::core::podspec::defaults::pod_template;
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            job_spec_defaults(spec);
        }
        copy_template_labels_to_job(o);
        if phase.create() {
            status_shape(o, &[]);
        }
    }

    /// Type-level defaults inside a JobSpec (shared by Job and CronJob's job template).
    pub(crate) fn job_spec_nested(spec: &mut Obj) {
        if let Some(pfp) = child(spec, "podFailurePolicy") {
            each_obj(pfp, "rules", |rule| {
                each_obj(rule, "onPodConditions", |c| {
                    default_str(c, "status", "True")
                });
            });
        }
        if let Some(t) = child_or_insert(spec, "template") {
            pod_template(t);
        }
    }

    /// `SetDefaults_Job` for the spec.
    pub(crate) fn job_spec_defaults(spec: &mut Obj) {
        if is_nil(spec, "completions") && is_nil(spec, "parallelism") {
            spec.insert("completions".into(), json!(1));
            spec.insert("parallelism".into(), json!(1));
        }
        default_ptr(spec, "parallelism", json!(1));
        if is_nil(spec, "backoffLimit") {
            let limit = if is_nil(spec, "backoffLimitPerIndex") {
                6
            } else {
                i64::from(i32::MAX)
            };
            spec.insert("backoffLimit".into(), json!(limit));
        }
        default_ptr(spec, "completionMode", json!("NonIndexed"));
        default_ptr(spec, "suspend", json!(false));
        let replacement = if is_nil(spec, "podFailurePolicy") {
            "TerminatingOrFailed"
        } else {
            "Failed"
        };
        default_ptr(spec, "podReplacementPolicy", json!(replacement));
        default_ptr(spec, "manualSelector", json!(false));
        job_spec_nested(spec);
    }

    /// A Job without labels takes its pod template's labels.
    pub(crate) fn copy_template_labels_to_job(o: &mut Obj) {
        let labels = o
            .get("spec")
            .and_then(|s| s.get("template"))
            .and_then(|t| t.get("metadata"))
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .filter(|l| !l.is_empty())
            .cloned();
        if let Some(labels) = labels {
            if let Some(meta) = child_or_insert(o, "metadata") {
                if is_empty_coll(meta, "labels") {
                    meta.insert("labels".into(), Value::Object(labels));
                }
            }
        }
    }

    /// Generate a `batch/v1` Job's selector and pod template labels, as the Job strategy does
    /// at create time when `spec.manualSelector` is not `true`.
    ///
    /// Adds `batch.kubernetes.io/job-name`, `job-name`, `batch.kubernetes.io/controller-uid` and
    /// `controller-uid` to `spec.template.metadata.labels` (keeping any the user set), adds
    /// `batch.kubernetes.io/controller-uid: <uid>` to `spec.selector.matchLabels`, then copies
    /// the template labels to `metadata.labels` when the Job has none (upstream does this by
    /// defaulting the object again when it is read back). Call it after [`apply_defaults`],
    /// once `metadata.uid` is known.
    pub fn generate_job_selector(obj: &mut Value, uid: &str) {
        let Some(o) = obj.as_object_mut() else { return };
        let name = o
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(spec) = child(o, "spec") else { return };
        if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
            return;
        }
        {
            let Some(template) = child_or_insert(spec, "template") else {
                return;
            };
            let Some(meta) = child_or_insert(template, "metadata") else {
                return;
            };
            let Some(labels) = child_or_insert(meta, "labels") else {
                return;
            };
            for key in ["job-name", "batch.kubernetes.io/job-name"] {
                if !labels.contains_key(key) {
                    labels.insert(key.into(), Value::String(name.clone()));
                }
            }
            for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
                if !labels.contains_key(key) {
                    labels.insert(key.into(), Value::String(uid.to_string()));
                }
            }
        }
        if let Some(selector) = child_or_insert(spec, "selector") {
            if let Some(ml) = child_or_insert(selector, "matchLabels") {
                if !ml.contains_key("batch.kubernetes.io/controller-uid") {
                    ml.insert(
                        "batch.kubernetes.io/controller-uid".into(),
                        Value::String(uid.to_string()),
                    );
                }
            }
        }
        copy_template_labels_to_job(o);
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// Whether the first condition of type `ty` is `True` (upstream `hasJobCondition`).
    fn has_condition(v: &Value, ty: &str) -> bool {
        arr(v, "/status/conditions")
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
            .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
    }

    fn print_job(v: &Value, now: DateTime<Utc>) -> Row {
        let succeeded = int(v, "/status/succeeded");
        let completions = match v.pointer("/spec/completions").and_then(Value::as_i64) {
            Some(c) => format!("{succeeded}/{c}"),
            None => match int(v, "/spec/parallelism") {
                p if p > 1 => format!("{succeeded}/1 of {p}"),
                _ => format!("{succeeded}/1"),
            },
        };
        let start = opt_s(v, "/status/startTime").and_then(parse_time);
        let done = opt_s(v, "/status/completionTime").and_then(parse_time);
        let duration = match (start, done) {
            (None, _) => String::new(),
            (Some(s), None) => elapsed(s, now),
            (Some(s), Some(d)) => elapsed(s, d),
        };
        let status = if has_condition(v, "Complete") {
            "Complete"
        } else if has_condition(v, "Failed") {
            "Failed"
        } else if crate::registry::table::deleting(v) {
            "Terminating"
        } else if has_condition(v, "Suspended") {
            "Suspended"
        } else if has_condition(v, "FailureTarget") {
            "FailureTarget"
        } else {
            "Running"
        };
        let (names, images) = containers(template_spec(v));
        Row::of(vec![
            name(v),
            json!(status),
            json!(completions),
            json!(duration),
            age(v, now),
            json!(names),
            json!(images),
            json!(format_label_selector(v.pointer("/spec/selector"))),
        ])
    }

    /// Jobs (`batch/v1`).
    pub(crate) static JOB: Printer = Printer {
        columns: &[
            NAME,
            string("Status", text("Status of the job.")),
            string(
                "Completions",
                field("io.k8s.api.batch.v1.JobStatus", "succeeded"),
            ),
            string("Duration", text("Time required to complete the job.")),
            AGE,
            CONTAINERS,
            IMAGES,
            wide(string(
                "Selector",
                field("io.k8s.api.batch.v1.JobSpec", "selector"),
            )),
        ],
        print: print_job,
    };
}
