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
                if let Err(msg) = parse_cron_standard(sched) {
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

    /// `validateTimeZone` without the tz-database lookup.
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
    }

    /// robfig/cron v3 `ParseStandard`, returning its error text.
    pub(crate) fn parse_cron_standard(spec: &str) -> Result<(), String> {
        let mut spec = spec;
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            match spec.find(' ') {
                Some(i) => spec = spec[i..].trim(),
                None => return Ok(()),
            }
        }
        if spec.starts_with('@') {
            return match spec {
                "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight"
                | "@hourly" => Ok(()),
                _ => match spec.strip_prefix("@every ") {
                    Some(d) => apimachinery::duration::parse(d)
                        .map(|_| ())
                        .map_err(|err| format!("failed to parse duration {spec}: {err}")),
                    None => Err(format!("unrecognized descriptor: {spec}")),
                },
            };
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        const MONTHS: [&str; 12] = [
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ];
        const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let bounds: [(i64, i64, &[&str], i64); 5] = [
            (0, 59, &[], 0),
            (0, 23, &[], 0),
            (1, 31, &[], 0),
            (1, 12, &MONTHS, 1),
            (0, 6, &DAYS, 0),
        ];
        for (f, (min, max, names, base)) in fields.iter().zip(bounds) {
            for expr in f.split(',').filter(|x| !x.is_empty()) {
                cron_range(expr, min, max, names, base)?;
            }
        }
        Ok(())
    }

    pub(crate) fn cron_int(expr: &str) -> Result<i64, String> {
        match expr.parse::<i64>() {
            Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
            Ok(n) => Ok(n),
            Err(_) => {
                let valid_syntax = {
                    let d = expr.strip_prefix(['+', '-']).unwrap_or(expr);
                    !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
                };
                let why = if valid_syntax {
                    "value out of range"
                } else {
                    "invalid syntax"
                };
                Err(format!(
                    "failed to parse int from {expr}: strconv.Atoi: parsing {}: {why}",
                    go_quote(expr)
                ))
            }
        }
    }

    pub(crate) fn cron_range(
        expr: &str,
        min: i64,
        max: i64,
        names: &[&str],
        base: i64,
    ) -> Result<(), String> {
        let range_and_step: Vec<&str> = expr.split('/').collect();
        let low_high: Vec<&str> = range_and_step[0].split('-').collect();
        let single = low_high.len() == 1;
        let named = |x: &str| -> Result<i64, String> {
            let lower = x.to_lowercase();
            match names.iter().position(|n| *n == lower) {
                Some(i) => Ok(i as i64 + base),
                None => cron_int(x),
            }
        };
        let (start, mut end);
        if low_high[0] == "*" || low_high[0] == "?" {
            start = min;
            end = max;
        } else {
            start = named(low_high[0])?;
            end = match low_high.len() {
                1 => start,
                2 => named(low_high[1])?,
                _ => return Err(format!("too many hyphens: {expr}")),
            };
        }
        let step = match range_and_step.len() {
            1 => 1,
            2 => {
                let st = cron_int(range_and_step[1])?;
                if single {
                    end = max;
                }
                st
            }
            _ => return Err(format!("too many slashes: {expr}")),
        };
        if start < min {
            return Err(format!(
                "beginning of range ({start}) below minimum ({min}): {expr}"
            ));
        }
        if end > max {
            return Err(format!(
                "end of range ({end}) above maximum ({max}): {expr}"
            ));
        }
        if start > end {
            return Err(format!(
                "beginning of range ({start}) beyond end of range ({end}): {expr}"
            ));
        }
        if step == 0 {
            return Err(format!("step of range should be a positive number: {expr}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::validation::parse_cron_standard;

    #[test]
    fn cron_parser() {
        for good in [
            "* * * * *",
            "*/15 0-5,7 1 jan-mar mon-fri",
            "@hourly",
            "@every 1h30m",
            "0 0 ? * SUN",
        ] {
            assert_eq!(parse_cron_standard(good), Ok(()), "{good}");
        }
        assert_eq!(
            parse_cron_standard("60 * * * *"),
            Err("end of range (60) above maximum (59): 60".into())
        );
        assert_eq!(
            parse_cron_standard("* * 0 * *"),
            Err("beginning of range (0) below minimum (1): 0".into())
        );
        assert_eq!(
            parse_cron_standard("x * * * *"),
            Err("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            parse_cron_standard("5-1 * * * *"),
            Err("beginning of range (5) beyond end of range (1): 5-1".into())
        );
        assert_eq!(
            parse_cron_standard("*/0 * * * *"),
            Err("step of range should be a positive number: */0".into())
        );
        assert_eq!(
            parse_cron_standard("@sometimes"),
            Err("unrecognized descriptor: @sometimes".into())
        );
        assert_eq!(
            parse_cron_standard("@every 5"),
            Err("failed to parse duration @every 5: time: missing unit in duration \"5\"".into())
        );
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
