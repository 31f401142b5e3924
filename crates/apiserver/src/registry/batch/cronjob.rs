//! CronJob (`batch/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `batch/v1` kind.
pub static KIND: Kind = Kind::new(&["cj"], &CronJobStrategy).in_all();

/// What CronJob does differently.
pub struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
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
        Ctx::new(def, old).check(|v, e| v.cron_job(e, obj))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CRON_JOB)
    }
}

pub(crate) mod validation {
    use crate::registry::batch::job::validation::job_spec;
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn cron_job(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let sched = st(spec, "schedule").unwrap_or("");
            if sched.is_empty() {
                e.required("spec.schedule", "");
            } else {
                if let Err(msg) = apimachinery::cron::parse_standard(sched) {
                    e.invalid("spec.schedule", s(sched), &msg);
                }
                let old_has_tz = self
                    .old
                    .and_then(|o| get(o, "spec"))
                    .and_then(|s| st(s, "schedule"))
                    .is_some_and(|s| s.contains("TZ"));
                if old_has_tz && sched.contains("TZ") && get(spec, "timeZone").is_some() {
                    e.invalid(
                        "spec.schedule",
                        s(sched),
                        "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                    );
                } else if !old_has_tz && sched.contains("TZ") {
                    e.invalid(
                        "spec.schedule",
                        s(sched),
                        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                    );
                }
            }
            e.nonnegative(
                "spec.startingDeadlineSeconds",
                int(spec, "startingDeadlineSeconds"),
            );
            if let Some(tz) = st(spec, "timeZone") {
                let old_tz = self
                    .old
                    .and_then(|o| get(o, "spec"))
                    .and_then(|s| st(s, "timeZone"));
                if old_tz != Some(tz) {
                    validate_time_zone(e, tz);
                }
            }
            if let Some(cp) = st(spec, "concurrencyPolicy").filter(|x| !x.is_empty()) {
                if !["Allow", "Forbid", "Replace"].contains(&cp) {
                    e.not_supported(
                        "spec.concurrencyPolicy",
                        js(cp),
                        &["Allow", "Forbid", "Replace"],
                    );
                }
            }
            let jt = get(spec, "jobTemplate").unwrap_or(&empty);
            let jspec = get(jt, "spec").unwrap_or(&empty);
            job_spec(e, jspec, "spec.jobTemplate.spec");
            if let Some(sel) = get(jspec, "selector") {
                e.invalid(
                    "spec.jobTemplate.spec.selector",
                    Bad::Json(selector_json(Some(sel))),
                    "`selector` will be auto-generated",
                );
            }
            if boolean(jspec, "manualSelector") == Some(true) {
                e.not_supported(
                    "spec.jobTemplate.spec.manualSelector",
                    Bad::Json(Value::Bool(true)),
                    &["nil", "false"],
                );
            }
            e.nonnegative(
                "spec.successfulJobsHistoryLimit",
                int(spec, "successfulJobsHistoryLimit"),
            );
            e.nonnegative(
                "spec.failedJobsHistoryLimit",
                int(spec, "failedJobsHistoryLimit"),
            );
            if self.old.is_none() {
                let name = get(o, "metadata").and_then(|m| st(m, "name")).unwrap_or("");
                if name.len() > 52 {
                    e.invalid(
                        "metadata.name",
                        s(name),
                        "must be no more than 52 characters",
                    );
                }
            }
        }
    }

    /// `validateTimeZone`: the IANA naming rules, then the zone must load (Go's
    /// `time.LoadLocation`, with the database bundled as upstream embeds `time/tzdata`).
    pub(crate) fn validate_time_zone(e: &mut Errs, tz: &str) {
        let p = "spec.timeZone";
        if tz.is_empty() {
            e.invalid(p, js(tz), "timeZone must be nil or non-empty string");
            return;
        }
        for part in tz.split('/') {
            let ok_chars = !part.is_empty()
                && part.len() <= 14
                && part
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'+'));
            if part == "." || part == ".." || part.starts_with('-') || !ok_chars {
                e.invalid(p, js(tz), &format!("unknown time zone {tz}"));
                return;
            }
        }
        if tz.eq_ignore_ascii_case("local") {
            e.invalid(
                p,
                js(tz),
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            );
        }
        if let Err(msg) = apimachinery::tz::load_location(tz) {
            e.invalid(p, js(tz), &msg);
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        if let Some(spec) = child(o, "spec") {
            default_str(spec, "concurrencyPolicy", "Allow");
            default_ptr(spec, "suspend", json!(false));
            default_ptr(spec, "successfulJobsHistoryLimit", json!(3));
            default_ptr(spec, "failedJobsHistoryLimit", json!(1));
            if let Some(jt) = child_or_insert(spec, "jobTemplate") {
                child_or_insert(jt, "metadata");
                if let Some(js) = child(jt, "spec") {
                    crate::registry::batch::job::defaults::job_spec_nested(js);
                }
            }
        }
        if phase.create() {
            status_shape(o, &[]);
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const CRON_SPEC: &str = "io.k8s.api.batch.v1.CronJobSpec";

    const CRON_STATUS: &str = "io.k8s.api.batch.v1.CronJobStatus";

    /// CronJobs (`batch/v1`).
    pub(crate) static CRON_JOB: Printer = Printer {
        columns: &[
            NAME,
            string("Schedule", field(CRON_SPEC, "schedule")),
            string("Timezone", field(CRON_SPEC, "timeZone")),
            crate::registry::table::boolean("Suspend", field(CRON_SPEC, "suspend")),
            integer("Active", field(CRON_STATUS, "active")),
            string("Last Schedule", field(CRON_STATUS, "lastScheduleTime")),
            AGE,
            CONTAINERS,
            IMAGES,
            wide(string(
                "Selector",
                field("io.k8s.api.batch.v1.JobSpec", "selector"),
            )),
        ],
        print: |v, now| {
            let last = match opt_s(v, "/status/lastScheduleTime") {
                Some(t) => since(Some(t), now),
                None => "<none>".into(),
            };
            let suspend = match v.pointer("/spec/suspend").and_then(Value::as_bool) {
                Some(b) => bool_word(b),
                None => "<unset>",
            };
            let (names, images) = containers(v.pointer("/spec/jobTemplate/spec/template/spec"));
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/schedule")),
                json!(opt_s(v, "/spec/timeZone").unwrap_or("<none>")),
                json!(suspend),
                json!(arr(v, "/status/active").len()),
                json!(last),
                age(v, now),
                json!(names),
                json!(images),
                json!(format_label_selector(
                    v.pointer("/spec/jobTemplate/spec/selector")
                )),
            ])
        },
    };
}
