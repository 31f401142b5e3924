//! Human-readable durations and ages, as `kubectl get` prints them (upstream
//! `k8s.io/apimachinery/pkg/util/duration.HumanDuration` and the printers'
//! `translateTimestampSince`).

use chrono::{DateTime, Utc};

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// A duration in nanoseconds as ~2-3 significant figures: `45s`, `3m10s`, `70m`,
/// `7h59m`, `47h`, `2d1h`, `367d`, `2y1d`, `8y`.
///
/// Up to two seconds in the future (clock skew) reads `0s`; more than that, `<invalid>`.
///
/// ```
/// use coxswain_apiserver::table::human_duration;
/// assert_eq!(human_duration(190 * 1_000_000_000), "3m10s");
/// assert_eq!(human_duration(49 * 3600 * 1_000_000_000), "2d1h");
/// ```
pub fn human_duration(nanos: i64) -> String {
    // Go's int(d.Seconds()) truncates towards zero, as Rust's integer division does.
    let seconds = nanos / SECOND;
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / MINUTE;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / HOUR;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of an RFC 3339 timestamp at `now`; `<unknown>` when it is missing or not a
/// timestamp (upstream: the zero time).
pub fn since(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match timestamp.and_then(parse_time) {
        Some(t) => elapsed(t, now),
        None => "<unknown>".into(),
    }
}

/// [`human_duration`] of the time from `t` to `now`.
pub fn elapsed(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let nanos = (now - t)
        .num_nanoseconds()
        .unwrap_or(if now > t { i64::MAX } else { i64::MIN });
    human_duration(nanos)
}

/// An RFC 3339 timestamp (`metav1.Time` or `metav1.MicroTime`); `None` when absent or
/// malformed.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if s.is_empty() {
        return None;
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const DAY: i64 = 24 * HOUR;

    #[test]
    fn human_duration_cases() {
        // upstream TestHumanDuration
        let cases = [
            (SECOND, "1s"),
            (70 * SECOND, "70s"),
            (190 * SECOND, "3m10s"),
            (70 * MINUTE, "70m"),
            (47 * HOUR, "47h"),
            (49 * HOUR, "2d1h"),
            ((8 * 24 + 2) * HOUR, "8d"),
            (367 * 24 * HOUR, "367d"),
            ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
            ((365 * 8 * 24 + 2) * HOUR, "8y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d}ns");
        }
    }

    #[test]
    fn human_duration_boundaries() {
        // upstream TestHumanDurationBoundaries
        let cases = [
            (-2 * SECOND, "<invalid>"),
            (-2 * SECOND + 1, "0s"),
            (0, "0s"),
            (SECOND - MS, "0s"),
            (2 * MINUTE - MS, "119s"),
            (2 * MINUTE, "2m"),
            (2 * MINUTE + SECOND, "2m1s"),
            (10 * MINUTE - MS, "9m59s"),
            (10 * MINUTE, "10m"),
            (10 * MINUTE + SECOND, "10m"),
            (3 * HOUR - MS, "179m"),
            (3 * HOUR, "3h"),
            (3 * HOUR + MINUTE, "3h1m"),
            (8 * HOUR - MS, "7h59m"),
            (8 * HOUR, "8h"),
            (8 * HOUR + 59 * MINUTE, "8h"),
            (2 * DAY - MS, "47h"),
            (2 * DAY, "2d"),
            (2 * DAY + HOUR, "2d1h"),
            (8 * DAY - MS, "7d23h"),
            (8 * DAY, "8d"),
            (8 * DAY + 23 * HOUR, "8d"),
            (2 * 365 * DAY - MS, "729d"),
            (2 * 365 * DAY, "2y"),
            (2 * 365 * DAY + 23 * HOUR, "2y"),
            (2 * 365 * DAY + 23 * HOUR + 59 * MINUTE, "2y"),
            (2 * 365 * DAY + DAY - MS, "2y"),
            (2 * 365 * DAY + DAY, "2y1d"),
            (3 * 365 * DAY, "3y"),
            (4 * 365 * DAY, "4y"),
            (5 * 365 * DAY, "5y"),
            (6 * 365 * DAY, "6y"),
            (7 * 365 * DAY, "7y"),
            (8 * 365 * DAY - MS, "7y364d"),
            (8 * 365 * DAY, "8y"),
            (8 * 365 * DAY + 364 * DAY, "8y"),
            (9 * 365 * DAY, "9y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d}ns");
        }
    }

    #[test]
    fn ages_of_timestamps() {
        let now = parse_time("2026-11-29T10:00:00Z").expect("time");
        assert_eq!(since(Some("2026-11-29T09:59:56Z"), now), "4s");
        assert_eq!(since(Some("2026-11-29T09:00:00Z"), now), "60m");
        assert_eq!(since(Some("2026-11-22T10:00:00Z"), now), "7d");
        assert_eq!(since(Some("2026-11-29T10:00:01Z"), now), "0s");
        assert_eq!(since(Some("2026-11-29T10:00:05Z"), now), "<invalid>");
        assert_eq!(since(Some("2026-11-29T09:59:58.500000Z"), now), "1s");
        assert_eq!(since(None, now), "<unknown>");
        assert_eq!(since(Some(""), now), "<unknown>");
        assert_eq!(since(Some("yesterday"), now), "<unknown>");
    }
}
