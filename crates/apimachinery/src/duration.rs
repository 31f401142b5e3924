//! Go durations (`time.ParseDuration`, `time.Duration.String`) and the human durations
//! `kubectl` prints (`k8s.io/apimachinery/pkg/util/duration.HumanDuration`).
//!
//! Durations are nanoseconds in an `i64`, as Go's `time.Duration`.
//!
//! ```
//! use coxswain_apimachinery::duration::{format, parse};
//! assert_eq!(parse("1h2m3.5s"), Ok(3_723_500_000_000));
//! assert_eq!(format(90_000_000_000), "1m30s");
//! assert_eq!(parse("5").unwrap_err(), "time: missing unit in duration \"5\"");
//! ```

use crate::gofmt::quote;

const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units `ns`, `us`
/// (`µs`, `μs`), `ms`, `s`, `m`, `h`; `"0"` needs no unit. Errors are Go's texts.
pub fn parse(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", quote(orig));
    const LIMIT: u64 = 1 << 63;
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next() {
        if c == '-' || c == '+' {
            neg = c == '-';
            s = &s[1..];
        }
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // leading integer
        let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &c in &b[..digits] {
            if v > LIMIT / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(c - b'0');
            if v > LIMIT {
                return Err(invalid());
            }
        }
        let pre = digits > 0;
        s = &s[digits..];
        // fraction
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let n = rest.bytes().take_while(|c| c.is_ascii_digit()).count();
            let mut overflow = false;
            for c in rest[..n].bytes() {
                if overflow {
                    continue;
                }
                if f > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(c - b'0');
                if y > LIMIT {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = n > 0;
            s = &rest[n..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let u = &s[..unit_len];
        s = &s[unit_len..];
        let unit: u64 = match u {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(u),
                    quote(orig)
                ))
            }
        };
        if v > LIMIT / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            // float64 is needed to be nanosecond accurate for fractions of hours
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        d += v;
        if d > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        // -(1<<63) is the one negative value without a positive counterpart
        return Ok((d as i128).wrapping_neg() as i64);
    }
    i64::try_from(d).map_err(|_| invalid())
}

/// [`parse`] for durations that cannot be negative (flags, annotations).
pub fn parse_std(s: &str) -> Result<std::time::Duration, String> {
    let n = parse(s.trim())?;
    u64::try_from(n)
        .map(std::time::Duration::from_nanos)
        .map_err(|_| format!("negative duration {}", quote(s)))
}

/// Go's `time.Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn format(nanos: i64) -> String {
    let neg = nanos < 0;
    let mut u = nanos.unsigned_abs();
    if u == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    if u < SECOND as u64 {
        let (prec, unit) = match u {
            0..=999 => (0, "ns"),
            1_000..=999_999 => (3, "\u{b5}s"),
            _ => (6, "ms"),
        };
        let (int, frac) = frac(u, prec);
        out.push_str(&int.to_string());
        out.push_str(&frac);
        out.push_str(unit);
    } else {
        let (secs, frac) = frac(u, 9);
        u = secs;
        let s = u % 60;
        u /= 60;
        if u > 0 {
            let m = u % 60;
            u /= 60;
            if u > 0 {
                out.push_str(&format!("{u}h"));
            }
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&format!("{s}{frac}s"));
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Go's `fmtFrac`: `v` divided by 10^prec, and the fraction as `.ddd` without trailing
/// zeros (empty when zero).
fn frac(v: u64, prec: u32) -> (u64, String) {
    let p = 10u64.pow(prec);
    let f = v % p;
    if f == 0 {
        return (v / p, String::new());
    }
    let digits = format!("{f:0width$}", width = prec as usize);
    (v / p, format!(".{}", digits.trim_end_matches('0')))
}

/// [`format()`] of a `std::time::Duration` (saturating at Go's largest duration).
pub fn format_std(d: std::time::Duration) -> String {
    format(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A duration in nanoseconds as ~2-3 significant figures: `45s`, `3m10s`, `70m`,
/// `7h59m`, `47h`, `2d1h`, `367d`, `2y1d`, `8y`.
///
/// Up to two seconds in the future (clock skew) reads `0s`; more than that, `<invalid>`.
///
/// ```
/// use coxswain_apimachinery::duration::human_duration;
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const DAY: i64 = 24 * HOUR;

    // Go's time TestParseDuration / TestDurationString tables (a selection).
    #[test]
    fn parse_as_go() {
        let ok: &[(&str, i64)] = &[
            ("0", 0),
            ("5s", 5 * SECOND),
            ("30s", 30 * SECOND),
            ("1478s", 1478 * SECOND),
            ("-5s", -5 * SECOND),
            ("+5s", 5 * SECOND),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * SECOND),
            ("5.6s", 5 * SECOND + 600 * MS),
            ("5.s", 5 * SECOND),
            (".5s", 500 * MS),
            ("1.0s", SECOND),
            ("1.00s", SECOND),
            ("1.004s", SECOND + 4 * MS),
            ("100.00100s", 100 * SECOND + MS),
            ("10ns", 10),
            ("11us", 11_000),
            ("12\u{b5}s", 12_000),
            ("12\u{3bc}s", 12_000),
            ("13ms", 13 * MS),
            ("14s", 14 * SECOND),
            ("15m", 15 * MINUTE),
            ("16h", 16 * HOUR),
            ("3h30m", 3 * HOUR + 30 * MINUTE),
            ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MS),
            ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                HOUR + 2 * MINUTE + 3 * SECOND + 4 * MS + 5_000 + 6,
            ),
            (
                "39h9m14.425s",
                39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MS,
            ),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * MINUTE),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.100000000000000000000h", 6 * MINUTE),
        ];
        for (s, want) in ok {
            assert_eq!(parse(s), Ok(*want), "{s}");
        }
        for bad in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "\u{85}\u{85}",
            "\u{fffd}",
            "9223372036854775808ns",
            "9223372036854775.808us",
            "-9223372036854775809ns",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse("3").unwrap_err(),
            "time: missing unit in duration \"3\""
        );
        assert_eq!(
            parse("1d").unwrap_err(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
        assert_eq!(parse("").unwrap_err(), "time: invalid duration \"\"");
        assert!(parse_std("-1s").is_err());
        assert_eq!(
            parse_std("1.5s"),
            Ok(std::time::Duration::from_millis(1500))
        );
    }

    #[test]
    fn format_as_go() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1\u{b5}s"),
            (2_200 * 1_000, "2.2ms"),
            (3_300 * MS, "3.3s"),
            (4 * MINUTE + 5 * SECOND, "4m5s"),
            (4 * MINUTE + 5 * SECOND + 1_000_000, "4m5.001s"),
            (5 * HOUR + 6 * MINUTE + 7 * SECOND + 1_000_000, "5h6m7.001s"),
            (8 * MINUTE + 1, "8m0.000000001s"),
            (HOUR, "1h0m0s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (-SECOND, "-1s"),
            (1_500, "1.5\u{b5}s"),
            (90_500_000_000, "1m30.5s"),
            (-3_723_000_000_000, "-1h2m3s"),
        ];
        for (d, want) in cases {
            assert_eq!(format(*d), *want, "{d}");
        }
        assert_eq!(format_std(std::time::Duration::from_millis(300)), "300ms");
    }

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
}
