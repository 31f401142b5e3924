//! String formats validated for CRDs (kube-openapi `strfmt.Default` restricted to
//! apiextensions' supported list), and the format stripping applied before validation.

use regex::Regex;
use std::sync::OnceLock;

/// Formats apiextensions keeps for string (or untyped / int-or-string) schemas,
/// normalized (dashes removed) as go-openapi does.
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// go-openapi's format name normalization (dashes removed).
pub fn normalize(name: &str) -> String {
    name.replace('-', "")
}

/// The format kept by `StripUnsupportedFormatsPostProcessor` for a schema with
/// the given OpenAPI type list, or `""` when the format is dropped.
pub fn effective_format<'a>(types: &[&str], format: &'a str) -> &'a str {
    if format.is_empty() {
        return "";
    }
    let t = if types.len() == 1 { types[0] } else { "" };
    let keep = match t {
        "" | "string" => SUPPORTED.contains(&normalize(format).as_str()),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format
    } else {
        ""
    }
}

/// Whether the strfmt registry knows `format` (normalized).
pub fn is_known(format: &str) -> bool {
    SUPPORTED.contains(&normalize(format).as_str())
}

fn re(cell: &'static OnceLock<Option<Regex>>, pat: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pat).ok()).as_ref()
}

macro_rules! rx {
    ($name:ident, $pat:expr) => {
        fn $name(s: &str) -> bool {
            static CELL: OnceLock<Option<Regex>> = OnceLock::new();
            re(&CELL, $pat).is_some_and(|r| r.is_match(s))
        }
    };
}

rx!(
    rx_hostname,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
rx!(
    rx_uuid,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
rx!(
    rx_uuid3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
rx!(
    rx_uuid4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
rx!(
    rx_uuid5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
rx!(
    rx_credit,
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$"
);
rx!(rx_isbn10, r"^(?:[0-9]{9}X|[0-9]{10})$");
rx!(rx_isbn13, r"^(?:[0-9]{13})$");
rx!(rx_hexcolor, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
rx!(
    rx_rgb,
    r"^rgb\(\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*,\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*,\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*\)$"
);
rx!(
    rx_base64,
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
);
rx!(rx_ssn, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
const DATE_TIME_PATTERN: &str =
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";

/// Whether `s` is valid for the (known) `format`, as strfmt.Default validates it.
pub fn validates(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => parse_ip_sloppy(s) && s.contains('.'),
        "ipv6" => s.contains(':') && s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => rx_uuid(s),
        "uuid3" => rx_uuid3(s),
        "uuid4" => rx_uuid4(s),
        "uuid5" => rx_uuid5(s),
        "isbn" => is_isbn(s, 10) || is_isbn(s, 13),
        "isbn10" => is_isbn(s, 10),
        "isbn13" => is_isbn(s, 13),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && rx_ssn(s),
        "hexcolor" => rx_hexcolor(s),
        "rgbcolor" => rx_rgb(s),
        "byte" => rx_base64(s),
        "password" => true,
        "date" => is_date(s),
        "duration" => is_duration(s),
        "datetime" => is_date_time(s),
        "k8sshortname" => s.len() <= 63 && apimachinery::names::is_dns1123_label(s).is_empty(),
        "k8slongname" => apimachinery::names::is_dns1123_subdomain(s).is_empty(),
        _ => true,
    }
}

fn is_hostname(s: &str) -> bool {
    rx_hostname(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go `time.Parse("2006-01-02", s)`.
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    if !(1..=12).contains(&m) || d < 1 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let dim = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= dim
}

fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(r) = re(&CELL, DATE_TIME_PATTERN) else {
        return false;
    };
    match r.captures(parts[1]) {
        Some(c) => {
            let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
            g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
        }
        None => false,
    }
}

/// Go `time.ParseDuration`.
fn go_parse_duration(s: &str) -> bool {
    let mut rest = s;
    if let Some(r) = rest.strip_prefix(['-', '+']) {
        rest = r;
    }
    if rest == "0" {
        return true;
    }
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
        let mut i = int_len;
        let mut frac_len = 0;
        if rest[i..].starts_with('.') {
            i += 1;
            frac_len = rest[i..].bytes().take_while(|b| b.is_ascii_digit()).count();
            i += frac_len;
        }
        if int_len == 0 && frac_len == 0 {
            return false;
        }
        rest = &rest[i..];
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return false;
        }
        rest = &rest[unit_len..];
    }
    true
}

fn is_duration(s: &str) -> bool {
    if go_parse_duration(s) {
        return true;
    }
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(r) = re(&CELL, r"(([0-9]+)\s*([A-Za-zµ]+))") else {
        return false;
    };
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for c in r.captures_iter(s) {
        let n = c.get(2).map_or("", |m| m.as_str());
        if n.parse::<i64>().is_err() {
            return false;
        }
        let unit = c.get(3).map_or("", |m| m.as_str()).trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || unit.eq_ignore_ascii_case(v) {
                    ok = true;
                }
            }
        }
    }
    ok
}

fn parse_ipv4_sloppy(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u32>().is_ok_and(|v| v <= 255)
        })
}

fn parse_ip_sloppy(s: &str) -> bool {
    parse_ipv4_sloppy(s) || (s.contains(':') && s.parse::<std::net::Ipv6Addr>().is_ok())
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(n) = bits.parse::<u32>() else {
        return false;
    };
    if parse_ipv4_sloppy(ip) {
        n <= 32
    } else if ip.contains(':') && ip.parse::<std::net::Ipv6Addr>().is_ok() {
        n <= 128
    } else {
        false
    }
}

/// Go `net.ParseMAC`.
fn is_mac(s: &str) -> bool {
    let hex2 = |p: &str| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit());
    let hex4 = |p: &str| p.len() == 4 && p.bytes().all(|b| b.is_ascii_hexdigit());
    let okn = |n: usize| n == 6 || n == 8 || n == 20;
    for sep in [':', '-'] {
        if s.len() >= 14 && s.as_bytes().get(2) == Some(&(sep as u8)) {
            let parts: Vec<&str> = s.split(sep).collect();
            return okn(parts.len()) && parts.iter().all(|p| hex2(p));
        }
    }
    if s.len() >= 14 && s.as_bytes().get(4) == Some(&b'.') {
        let parts: Vec<&str> = s.split('.').collect();
        return okn(parts.len() * 2) && parts.iter().all(|p| hex4(p));
    }
    false
}

fn is_isbn(s: &str, version: u32) -> bool {
    let san: String = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect();
    let d: Vec<u32> = san
        .bytes()
        .map(|b| (b as u32).wrapping_sub('0' as u32))
        .collect();
    if version == 10 {
        if !rx_isbn10(&san) {
            return false;
        }
        let mut sum = 0u32;
        for (i, v) in d.iter().take(9).enumerate() {
            sum += (i as u32 + 1) * v;
        }
        sum += if san.ends_with('X') { 100 } else { 10 * d[9] };
        sum.is_multiple_of(11)
    } else {
        if !rx_isbn13(&san) {
            return false;
        }
        let mut sum = 0u32;
        for (i, v) in d.iter().take(12).enumerate() {
            sum += if i % 2 == 0 { *v } else { 3 * v };
        }
        (10 - sum % 10) % 10 == d[12]
    }
}

fn is_credit_card(s: &str) -> bool {
    let san: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    if !rx_credit(&san) {
        return false;
    }
    let mut sum = 0u32;
    let mut dbl = false;
    for b in san.bytes().rev() {
        let mut v = (b - b'0') as u32;
        if dbl {
            v *= 2;
            if v >= 10 {
                v = v % 10 + 1;
            }
        }
        sum += v;
        dbl = !dbl;
    }
    sum.is_multiple_of(10)
}

fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || (c as u32) >= 0x80
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && !s.ends_with('.')
        && !s.contains("..")
        && s.chars().all(|c| c == '.' || is_atext(c))
}

fn is_addr_spec(s: &str) -> bool {
    let Some(at) = s.rfind('@') else { return false };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        true
    } else {
        is_dot_atom(local)
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') {
        true
    } else {
        is_dot_atom(domain)
    };
    local_ok && domain_ok
}

/// Approximation of Go `net/mail.ParseAddress` success.
fn is_email(s: &str) -> bool {
    let t = s.trim();
    if let (Some(lt), true) = (t.rfind('<'), t.ends_with('>')) {
        return is_addr_spec(&t[lt + 1..t.len() - 1]);
    }
    is_addr_spec(t)
}

/// Approximation of Go `url.ParseRequestURI` success.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    // percent escapes must be well formed
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(|c| c.is_ascii_hexdigit())
                && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit()))
            {
                return false;
            }
            i += 3;
            continue;
        }
        i += 1;
    }
    let rest = s.split('#').next().unwrap_or("");
    // scheme
    let mut scheme = "";
    let mut after = rest;
    for (i, c) in rest.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if i > 0 && (c.is_ascii_digit() || c == '+' || c == '-' || c == '.') {
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false; // missing protocol scheme
            }
            scheme = &rest[..i];
            after = &rest[i + 1..];
        }
        break;
    }
    if scheme.is_empty() {
        if !after.starts_with('/') {
            return false;
        }
    } else if !after.starts_with('/') {
        return true; // opaque
    }
    if let Some(auth_rest) = after.strip_prefix("//") {
        if scheme.is_empty() && !after.starts_with("///") {
            // "//host" without scheme is a path for requests
            return true;
        }
        let authority = auth_rest.split(['/', '?']).next().unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(h) = host.strip_prefix('[') {
            let Some((ip, port)) = h.split_once(']') else {
                return false;
            };
            let ip = ip.split('%').next().unwrap_or("");
            if ip.parse::<std::net::Ipv6Addr>().is_err() {
                return false;
            }
            return port.is_empty()
                || port
                    .strip_prefix(':')
                    .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
        }
        if let Some((_, port)) = host.rsplit_once(':') {
            if !port.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let ok = [
            ("date", "2020-02-29"),
            ("date-time", "2020-01-01T10:00:00Z"),
            ("date-time", "2020-01-01T10:00:00.123+02:00"),
            ("duration", "1h30m"),
            ("duration", "5 days"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
            ("ipv4", "10.0.0.1"),
            ("ipv6", "::1"),
            ("cidr", "10.0.0.0/8"),
            ("mac", "01:23:45:67:89:ab"),
            ("mac", "0123.4567.89ab"),
            ("hostname", "example.com"),
            ("email", "a@b.com"),
            ("email", "Joe <joe@example.com>"),
            ("uri", "http://example.com/x"),
            ("uri", "/path"),
            ("byte", "aGVsbG8="),
            ("k8s-short-name", "abc"),
            ("k8s-long-name", "a.b"),
            ("isbn10", "0321751043"),
            ("isbn13", "978-0321751041"),
            ("creditcard", "4111 1111 1111 1111"),
            ("ssn", "123-45-6789"),
            ("hexcolor", "#fff"),
            ("rgbcolor", "rgb(1, 2, 255)"),
            ("bsonobjectid", "507f1f77bcf86cd799439011"),
        ];
        for (f, s) in ok {
            assert!(validates(f, s), "{f} {s}");
        }
        let bad = [
            ("date", "2021-02-29"),
            ("date", "2020-1-01"),
            ("date-time", "2020-01-01T25:00:00Z"),
            ("date-time", "2020-01-01"),
            ("duration", "abc"),
            ("uuid", "123"),
            ("ipv4", "::1"),
            ("ipv4", "256.0.0.1"),
            ("ipv6", "1.2.3.4"),
            ("cidr", "10.0.0.0/33"),
            ("mac", "01:23:45"),
            ("hostname", "-"),
            ("email", "nope"),
            ("uri", "foo"),
            ("byte", "abc"),
            ("k8s-short-name", "a-"),
            ("k8s-long-name", "a.-"),
            ("isbn10", "0321751044"),
            ("creditcard", "4111 1111 1111 1112"),
            ("hexcolor", "#ffff"),
        ];
        for (f, s) in bad {
            assert!(!validates(f, s), "{f} {s}");
        }
    }

    #[test]
    fn stripping() {
        assert_eq!(effective_format(&["string"], "date-time"), "date-time");
        assert_eq!(effective_format(&["string"], "foo"), "");
        assert_eq!(effective_format(&["integer"], "int32"), "int32");
        assert_eq!(effective_format(&["integer"], "date"), "");
        assert_eq!(effective_format(&["number"], "double"), "double");
        assert_eq!(effective_format(&["boolean"], "byte"), "");
        assert_eq!(effective_format(&["integer", "string"], "int32"), "");
        assert_eq!(effective_format(&[], "uuid"), "uuid");
    }
}
