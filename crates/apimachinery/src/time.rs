//! Times as Kubernetes writes them: `metav1.Time` (RFC 3339 in UTC, to the second) and
//! `metav1.MicroTime` (to the microsecond), their parsing, civil-date arithmetic, and
//! the ages `kubectl get` prints.
//!
//! ```
//! use coxswain_apimachinery::time;
//! let mut t = "2026-11-29T11:00:00.5+01:00".to_string();
//! time::normalize_time(&mut t, false);
//! assert_eq!(t, "2026-11-29T10:00:00Z");
//! assert_eq!(time::parse_rfc3339_nanos("1970-01-01T00:00:01Z"), Some(1_000_000_000));
//! ```

use chrono::{DateTime, SecondsFormat, Utc};

/// A time as `metav1.Time` serialises it: `2026-11-29T10:00:00Z`.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A time as `metav1.MicroTime` serialises it: `2026-11-29T10:00:00.123456Z`.
pub fn format_micro_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The current time as a `metav1.Time`.
pub fn now_rfc3339() -> String {
    format_time(Utc::now())
}

/// The time `secs` seconds from now as a `metav1.Time`.
pub fn rfc3339_in(secs: i64) -> String {
    format_time(Utc::now() + chrono::Duration::seconds(secs))
}

/// Rewrite an RFC 3339 string as the API server stores a `metav1.Time` (`micro`
/// false) or `MicroTime` (true): in UTC, truncated to the second or microsecond. A
/// string that is not a time is left as it is (validation rejects it).
pub fn normalize_time(s: &mut String, micro: bool) {
    let Some(t) = parse_time(s) else {
        return;
    };
    let out = if micro {
        format_micro_time(t)
    } else {
        format_time(t)
    };
    if *s != out {
        *s = out;
    }
}

/// An RFC 3339 timestamp (`metav1.Time` or `metav1.MicroTime`); `None` when empty or
/// malformed.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if s.is_empty() {
        return None;
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// An RFC 3339 time to the second in UTC (`2026-11-29T10:00:00Z`).
pub fn to_rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The proleptic Gregorian date (year, month, day) `z` days after 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days in month `m` (1-12) of year `y`.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Parses a `YYYY-MM-DD` date into nanoseconds since the epoch (its midnight UTC).
pub fn parse_date_nanos(x: &str) -> Option<i128> {
    let b = x.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: i64 = x[0..4].parse().ok()?;
    let m: u32 = x[5..7].parse().ok()?;
    let d: u32 = x[8..10].parse().ok()?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d) as i128 * 86_400 * 1_000_000_000)
}

/// Parses an RFC 3339 timestamp into nanoseconds since the epoch (Go's `time.Parse`
/// with `time.RFC3339`: fractions up to nanoseconds, `Z` or a `±hh:mm` offset).
pub fn parse_rfc3339_nanos(x: &str) -> Option<i128> {
    if x.len() < 20 || !x.is_char_boundary(10) || !x.is_char_boundary(19) {
        return None;
    }
    let days = parse_date_nanos(&x[0..10])? / 1_000_000_000;
    let b = x.as_bytes();
    if !(b[10] == b'T' || b[10] == b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<i128> {
        let t = &x[r];
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (h, mi, se) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &x[19..];
    let mut nanos: i128 = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if n == 0 || n > 9 {
            return None;
        }
        nanos = r[..n].parse::<i128>().ok()? * 10i128.pow(9 - n as u32);
        rest = &r[n..];
    }
    let off: i128 = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && &rest[3..4] == ":" =>
        {
            let oh: i128 = rest[1..3].parse().ok()?;
            let om: i128 = rest[4..6].parse().ok()?;
            let o = (oh * 60 + om) * 60;
            if rest.starts_with('-') {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let secs = days + h * 3600 + mi * 60 + se - off;
    Some(secs * 1_000_000_000 + nanos)
}

/// The age of an RFC 3339 timestamp at `now`; `<unknown>` when it is missing or not a
/// timestamp (upstream: the zero time).
pub fn since(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match timestamp.and_then(parse_time) {
        Some(t) => elapsed(t, now),
        None => "<unknown>".into(),
    }
}

/// [`human_duration`](crate::duration::human_duration) of the time from `t` to `now`.
pub fn elapsed(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let nanos = (now - t)
        .num_nanoseconds()
        .unwrap_or(if now > t { i64::MAX } else { i64::MIN });
    crate::duration::human_duration(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_and_civil_dates() {
        assert_eq!(parse_rfc3339_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_nanos("2024-01-01T01:00:00.5+01:00"),
            Some(1_704_067_200 * 1_000_000_000 + 500_000_000)
        );
        assert_eq!(parse_rfc3339_nanos("2024-02-30T00:00:00Z"), None);
        assert_eq!(parse_rfc3339_nanos("nope"), None);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-719_162), (1, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
        let mut micro = "2026-11-29T10:00:00.1234567Z".to_string();
        normalize_time(&mut micro, true);
        assert_eq!(micro, "2026-11-29T10:00:00.123456Z");
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
