//! Cron schedules exactly as Kubernetes reads them: `robfig/cron` v3's standard parser
//! (`cron.ParseStandard`) and its `Next`.
//!
//! The API server validates `spec.schedule` of a CronJob with it, and the CronJob
//! controller computes when to run from it, so both must agree with upstream to the
//! error text. The grammar:
//!
//! - five fields, minute (0-59), hour (0-23), day of month (1-31), month (1-12 or
//!   `jan`-`dec`) and day of week (0-6 or `sun`-`sat`; 7 is an error), separated by any
//!   whitespace; each a comma list (empty items are dropped) of `*`, `?`, `N`, `N-M`,
//!   each optionally `/step` (`N/step` means `N-max/step`); names are case-insensitive;
//! - or a descriptor: `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
//!   (`@midnight`), `@hourly`, or `@every <Go duration>` (at least a second, whole
//!   seconds, counted from the time given to `next`);
//! - optionally prefixed by `TZ=<zone> ` or `CRON_TZ=<zone> `: the schedule runs in that
//!   IANA zone (without it, in the caller's zone: UTC for coxswain).
//!
//! The day of month and the day of week are ORed (Vixie cron) when neither field is
//! *unrestricted*, and ANDed otherwise; unrestricted means the field starts with `*` or
//! `?` with no step above 1 (`*/1` is unrestricted, `*/2` is not).
//!
//! [`Schedule::next`] is robfig's walk, field by field, on the wall clock of the
//! schedule's zone, with Go's date arithmetic ([`crate::tz::Location::date`]): on a
//! spring-forward day a time in the gap is skipped, on a fall-back day a time in the
//! repeated hour runs twice, and a schedule with no match within five years returns
//! [`zero_time`] (Go's zero `time.Time`).
//!
//! ```
//! use coxswain_apimachinery::cron::parse_standard;
//! let s = parse_standard("*/15 9-17 * * mon-fri").unwrap();
//! let t = "2026-01-02T17:50:00Z".parse().unwrap(); // a Friday
//! assert_eq!(s.next(t).to_string(), "2026-01-05T09:00:00Z");
//! assert_eq!(
//!     parse_standard("61 * * * *").unwrap_err(),
//!     "end of range (61) above maximum (59): 61"
//! );
//! ```

use k8s_openapi::jiff::Timestamp;

use crate::tz::{load_location, Location};

#[cfg(test)]
mod tests;

/// Set on a field that was `*` or `?` (without a step above 1).
const STAR_BIT: u64 = 1 << 63;

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in seconds since the epoch.
const ZERO_UNIX: i64 = -62_135_596_800;

/// Go's zero `time.Time`: what [`Schedule::next`] returns when nothing matches within
/// five years.
pub fn zero_time() -> Timestamp {
    Timestamp::from_second(ZERO_UNIX).unwrap_or(Timestamp::MIN)
}

/// Whether `t` is Go's zero time.
pub fn is_zero(t: Timestamp) -> bool {
    t == zero_time()
}

/// The range of one field.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
    /// The value of the first name.
    base: u64,
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
    base: 0,
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
    base: 0,
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
    base: 0,
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
    base: 1,
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    base: 0,
};

/// A parsed schedule.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// Five fields (or a descriptor other than `@every`).
    Spec(SpecSchedule),
    /// `@every <duration>`.
    Every(ConstantDelay),
}

/// A schedule of fields: a bit per allowed value, the star bit for an unrestricted field.
#[derive(Clone, Debug)]
pub struct SpecSchedule {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    /// `None`: the caller's zone (Go's `time.Local`).
    location: Option<Location>,
}

/// `@every`: a fixed delay in whole seconds (at least one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantDelay {
    /// The delay in seconds.
    pub seconds: i64,
}

impl ConstantDelay {
    /// robfig's `Every`: below a second is a second, fractions of a second are dropped.
    pub fn every(nanos: i64) -> ConstantDelay {
        let nanos = nanos.max(1_000_000_000);
        ConstantDelay {
            seconds: nanos / 1_000_000_000,
        }
    }
}

/// `t` as whole seconds and nanoseconds in `[0, 1e9)`, as Go splits a time.
fn split(t: Timestamp) -> (i64, i64) {
    let (mut secs, mut nanos) = (t.as_second(), i64::from(t.subsec_nanosecond()));
    if nanos < 0 {
        secs -= 1;
        nanos += 1_000_000_000;
    }
    (secs, nanos)
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap_or(Timestamp::MAX)
}

impl Schedule {
    /// The first activation strictly after `t` (to the second), schedules without a
    /// zone read in UTC.
    pub fn next(&self, t: Timestamp) -> Timestamp {
        self.next_in(t, &Location::utc())
    }

    /// The first activation strictly after `t`; a schedule without a zone is read in
    /// `local` (Go uses the zone of the time it is given).
    pub fn next_in(&self, t: Timestamp, local: &Location) -> Timestamp {
        match self {
            Schedule::Every(d) => {
                let (secs, _) = split(t);
                at(secs + d.seconds)
            }
            Schedule::Spec(s) => s.next(t, local),
        }
    }

    /// The zone the schedule names (`TZ=`), if any.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Schedule::Spec(s) => s.location.as_ref(),
            Schedule::Every(_) => None,
        }
    }
}

impl SpecSchedule {
    fn day_matches(&self, weekday: u32, day: u32) -> bool {
        let dom_match = self.dom & (1 << day) != 0;
        let dow_match = self.dow & (1 << weekday) != 0;
        if self.dom & STAR_BIT != 0 || self.dow & STAR_BIT != 0 {
            dom_match && dow_match
        } else {
            dom_match || dow_match
        }
    }

    /// robfig's `SpecSchedule.Next`.
    fn next(&self, t: Timestamp, local: &Location) -> Timestamp {
        let loc = self.location.as_ref().unwrap_or(local);
        let (secs, _) = split(t);
        // the upcoming second
        let mut t = secs + 1;
        let mut added = false;
        let year_limit = loc.civil(t).year + 5;

        'wrap: loop {
            let c = loc.civil(t);
            if c.year > year_limit {
                return zero_time();
            }
            // the month
            while self.month & (1 << loc.civil(t).month) == 0 {
                if !added {
                    added = true;
                    let c = loc.civil(t);
                    t = loc.date(c.year, i64::from(c.month), 1, 0, 0, 0);
                }
                t = add_date(loc, t, 0, 1, 0);
                if loc.civil(t).month == 1 {
                    continue 'wrap;
                }
            }
            // the day
            loop {
                let c = loc.civil(t);
                if self.day_matches(c.weekday, c.day) {
                    break;
                }
                if !added {
                    added = true;
                    t = loc.date(c.year, i64::from(c.month), i64::from(c.day), 0, 0, 0);
                }
                t = add_date(loc, t, 0, 0, 1);
                // midnight may not exist on a DST day: move back onto it
                let hour = i64::from(loc.civil(t).hour);
                if hour != 0 {
                    if hour > 12 {
                        t += (24 - hour) * 3600;
                    } else {
                        t -= hour * 3600;
                    }
                }
                if loc.civil(t).day == 1 {
                    continue 'wrap;
                }
            }
            // the hour
            while self.hour & (1 << loc.civil(t).hour) == 0 {
                if !added {
                    added = true;
                    let c = loc.civil(t);
                    t = loc.date(
                        c.year,
                        i64::from(c.month),
                        i64::from(c.day),
                        i64::from(c.hour),
                        0,
                        0,
                    );
                }
                t += 3600;
                if loc.civil(t).hour == 0 {
                    continue 'wrap;
                }
            }
            // the minute (truncation is on absolute time, as Go's Truncate)
            while self.minute & (1 << loc.civil(t).minute) == 0 {
                if !added {
                    added = true;
                    t -= t.rem_euclid(60);
                }
                t += 60;
                if loc.civil(t).minute == 0 {
                    continue 'wrap;
                }
            }
            // the second
            while self.second & (1 << loc.civil(t).second) == 0 {
                added = true;
                t += 1;
                if loc.civil(t).second == 0 {
                    continue 'wrap;
                }
            }
            return at(t);
        }
    }
}

/// Go's `t.AddDate(years, months, days)`: the wall clock moved, then resolved again.
fn add_date(loc: &Location, t: i64, years: i64, months: i64, days: i64) -> i64 {
    let c = loc.civil(t);
    loc.date(
        c.year + years,
        i64::from(c.month) + months,
        i64::from(c.day) + days,
        i64::from(c.hour),
        i64::from(c.minute),
        i64::from(c.second),
    )
}

/// robfig/cron v3 `ParseStandard`: the error texts are robfig's (and Go's, for numbers
/// and durations), as the API server reports them.
pub fn parse_standard(spec: &str) -> Result<Schedule, String> {
    if spec.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = spec;
    let mut location = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(i) = spec.find(' ') else {
            // robfig slices past the end here and panics; Kubernetes' wrapper reports it
            return Err(
                "invalid schedule format: runtime error: slice bounds out of range [:-1]"
                    .to_string(),
            );
        };
        let eq = spec.find('=').unwrap_or(0);
        let name = &spec[eq + 1..i];
        let loc = load_location(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
        // `Local` is the caller's zone, as no prefix
        if loc.name() != "Local" {
            location = Some(loc);
        }
        spec = spec[i..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, location);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    Ok(Schedule::Spec(SpecSchedule {
        second: 1,
        minute: get_field(fields[0], MINUTES)?,
        hour: get_field(fields[1], HOURS)?,
        dom: get_field(fields[2], DOM)?,
        month: get_field(fields[3], MONTHS)?,
        dow: get_field(fields[4], DOW)?,
        location,
    }))
}

fn all(b: Bounds) -> u64 {
    get_bits(b.min, b.max, 1) | STAR_BIT
}

fn parse_descriptor(spec: &str, location: Option<Location>) -> Result<Schedule, String> {
    let fields = |minute, hour, dom, month, dow| {
        Ok(Schedule::Spec(SpecSchedule {
            second: 1,
            minute,
            hour,
            dom,
            month,
            dow,
            location: location.clone(),
        }))
    };
    match spec {
        "@yearly" | "@annually" => fields(1, 1, 1 << DOM.min, 1 << MONTHS.min, all(DOW)),
        "@monthly" => fields(1, 1, 1 << DOM.min, all(MONTHS), all(DOW)),
        "@weekly" => fields(1, 1, all(DOM), all(MONTHS), 1 << DOW.min),
        "@daily" | "@midnight" => fields(1, 1, all(DOM), all(MONTHS), all(DOW)),
        "@hourly" => fields(1, all(HOURS), all(DOM), all(MONTHS), all(DOW)),
        _ => match spec.strip_prefix("@every ") {
            Some(d) => crate::duration::parse(d)
                .map(|nanos| Schedule::Every(ConstantDelay::every(nanos)))
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// A comma list of ranges; empty items are dropped (Go's `strings.FieldsFunc`).
fn get_field(field: &str, b: Bounds) -> Result<u64, String> {
    let mut bits = 0;
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        bits |= get_range(expr, b)?;
    }
    Ok(bits)
}

/// `N`, `N-M`, `*` or `?`, each optionally `/step`.
fn get_range(expr: &str, b: Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end);
    let mut extra = 0;
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = b.min;
        end = b.max;
        extra = STAR_BIT;
    } else {
        start = parse_int_or_name(low_and_high[0], b)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // `N/step` is `N-max/step`
            if single {
                end = b.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
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
    Ok(get_bits(start, end, step) | extra)
}

fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    let mut bits = 0;
    let mut i = min;
    while i <= max {
        bits |= 1 << i;
        i = match i.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    bits
}

fn parse_int_or_name(expr: &str, b: Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    if let Some(i) = b.names.iter().position(|n| *n == lower) {
        return Ok(i as u64 + b.base);
    }
    must_parse_int(expr)
}

/// Go's `strconv.Atoi`, then no negatives.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let num = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    if num < 0 {
        return Err(format!("negative number ({num}) not allowed: {expr}"));
    }
    Ok(num as u64)
}

/// Go's `strconv.Atoi` with its error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            crate::gofmt::quote(s)
        ));
    }
    s.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            crate::gofmt::quote(s)
        )
    })
}
