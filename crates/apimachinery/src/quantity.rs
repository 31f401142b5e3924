//! Resource quantities (`k8s.io/apimachinery/pkg/api/resource.Quantity`): parsing,
//! the canonical form the API server writes back (`"0.5"` is stored as `"500m"`,
//! `"1024Mi"` as `"1Gi"`), and milli-values.
//!
//! ```
//! use coxswain_apimachinery::quantity;
//! assert_eq!(quantity::parse("0.5").unwrap().canonical(), "500m");
//! assert_eq!(quantity::parse("1024Mi").unwrap().canonical(), "1Gi");
//! assert_eq!(quantity::parse_milli("100m"), Some(100));
//! assert!(quantity::parse("1.5.5").is_none());
//! ```

use serde_json::Value;

const NANO: i128 = 1_000_000_000;

/// The notation a quantity was written in; its canonical form keeps it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// `100m`, `1.5G`: powers of 1000 with SI suffixes.
    DecimalSi,
    /// `64Mi`: powers of 1024.
    BinarySi,
    /// `1e3`: a decimal exponent.
    DecimalExponent,
}

/// A resource quantity held in units of 10^-9, with the format its string used.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl std::ops::Add for Quantity {
    type Output = Quantity;

    /// The sum, in the format of the first non-zero operand.
    fn add(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos + other.nanos,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }
}

impl std::ops::Sub for Quantity {
    type Output = Quantity;

    /// The difference, in the format of the first operand (of the second when the
    /// first is zero), as upstream `Quantity.Sub`.
    fn sub(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos - other.nanos,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }
}

impl Quantity {
    /// A whole number of units in `format` (`resource.NewQuantity`).
    pub fn from_value(value: i64, format: Format) -> Quantity {
        Quantity {
            nanos: i128::from(value) * NANO,
            format,
        }
    }

    /// A zero quantity (`resource.Quantity{Format: DecimalSI}`, printed `0`).
    pub fn zero() -> Quantity {
        Quantity {
            nanos: 0,
            format: Format::DecimalSi,
        }
    }

    /// Compare the values, ignoring the formats (`Quantity.Cmp`).
    pub fn cmp_value(&self, other: &Quantity) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }

    /// Whether the quantity is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }
}

impl Quantity {
    /// A quantity of `nanos` units of 10^-9 in `format` (`resource.NewScaledQuantity(n, Nano)`
    /// is `from_nanos(n, DecimalSi)`; bytes as `NewQuantity(b, BinarySI)` are
    /// `from_nanos(b * 10^9, BinarySi)`).
    pub fn from_nanos(nanos: i128, format: Format) -> Quantity {
        Quantity { nanos, format }
    }

    /// Round away from zero to a multiple of 10^-3.
    pub fn round_up_milli(self) -> Quantity {
        let step = 1_000_000;
        let rem = self.nanos % step;
        let nanos = if rem == 0 {
            self.nanos
        } else {
            self.nanos - rem + step * self.nanos.signum()
        };
        Quantity { nanos, ..self }
    }

    /// The canonical string Kubernetes serialises this quantity as.
    pub fn canonical(self) -> String {
        if self.nanos == 0 {
            return "0".into();
        }
        let mut format = self.format;
        if format == Format::BinarySi && (self.nanos.abs() < 1024 * NANO || self.nanos % NANO != 0)
        {
            format = Format::DecimalSi;
        }
        if format == Format::BinarySi {
            let mut units = self.nanos / NANO;
            let mut exp = 0;
            while exp < 6 && units % 1024 == 0 {
                units /= 1024;
                exp += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp];
            return format!("{units}{suffix}");
        }
        let mut mantissa = self.nanos;
        let mut exp: i32 = -9;
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exp += 1;
        }
        match exp.rem_euclid(3) {
            1 => {
                mantissa *= 10;
                exp -= 1;
            }
            2 => {
                mantissa *= 100;
                exp -= 2;
            }
            _ => {}
        }
        let suffix = match (format, exp) {
            (_, 0) => String::new(),
            (Format::DecimalSi, -9) => "n".into(),
            (Format::DecimalSi, -6) => "u".into(),
            (Format::DecimalSi, -3) => "m".into(),
            (Format::DecimalSi, 3) => "k".into(),
            (Format::DecimalSi, 6) => "M".into(),
            (Format::DecimalSi, 9) => "G".into(),
            (Format::DecimalSi, 12) => "T".into(),
            (Format::DecimalSi, 15) => "P".into(),
            (Format::DecimalSi, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{mantissa}{suffix}")
    }
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// Parse a Kubernetes quantity string (`"100m"`, `"1.5Gi"`, `"2e3"`, ...); `None`
/// when malformed. Precision below 10^-9 is rounded away from zero.
pub fn parse(s: &str) -> Option<Quantity> {
    let s = s.trim();
    let b = s.as_bytes();
    let mut pos = 0;
    let mut negative = false;
    match b.first()? {
        b'-' => {
            negative = true;
            pos += 1;
        }
        b'+' => pos += 1,
        _ => {}
    }
    let num_start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = &s[num_start..pos];
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let d_start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[d_start..pos];
    }
    if num.is_empty() && denom.is_empty() {
        return None;
    }
    let suffix = &s[pos..];
    let (base, exp, format): (u32, i32, Format) = match suffix {
        "" => (10, 0, Format::DecimalSi),
        "n" => (10, -9, Format::DecimalSi),
        "u" => (10, -6, Format::DecimalSi),
        "m" => (10, -3, Format::DecimalSi),
        "k" => (10, 3, Format::DecimalSi),
        "M" => (10, 6, Format::DecimalSi),
        "G" => (10, 9, Format::DecimalSi),
        "T" => (10, 12, Format::DecimalSi),
        "P" => (10, 15, Format::DecimalSi),
        "E" => (10, 18, Format::DecimalSi),
        "Ki" => (2, 10, Format::BinarySi),
        "Mi" => (2, 20, Format::BinarySi),
        "Gi" => (2, 30, Format::BinarySi),
        "Ti" => (2, 40, Format::BinarySi),
        "Pi" => (2, 50, Format::BinarySi),
        "Ei" => (2, 60, Format::BinarySi),
        other => {
            let rest = other.strip_prefix(['e', 'E'])?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (10, rest.parse::<i32>().ok()?, Format::DecimalExponent)
        }
    };
    let digits = format!("{num}{denom}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mut mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let mut power: i64 = 9 - denom.len() as i64;
    if base == 2 {
        mantissa = mantissa.checked_mul(1i128.checked_shl(exp as u32)?)?;
    } else {
        power += i64::from(exp);
    }
    let nanos = if power >= 0 {
        mantissa.checked_mul(pow10(u32::try_from(power).ok()?)?)?
    } else {
        let div = pow10(u32::try_from(-power).ok()?).unwrap_or(i128::MAX);
        let q = mantissa / div;
        if mantissa % div != 0 {
            q + 1
        } else {
            q
        }
    };
    Some(Quantity {
        nanos: if negative { -nanos } else { nanos },
        format,
    })
}

/// A quantity from a JSON string or number.
pub fn from_json(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => parse(s),
        Value::Number(n) => parse(&n.to_string()),
        _ => None,
    }
}

impl Quantity {
    /// `Quantity.MilliValue()`: the value in thousandths, rounded away from zero
    /// (`"100m"` cpu is 100, `"1Gi"` is 1 073 741 824 000).
    pub fn milli_value(self) -> i128 {
        let step = 1_000_000;
        let q = self.nanos / step;
        if self.nanos % step == 0 {
            q
        } else {
            q + self.nanos.signum()
        }
    }

    /// `Quantity.Value()`: the value in units, rounded away from zero.
    pub fn value(self) -> i128 {
        let q = self.nanos / NANO;
        if self.nanos % NANO == 0 {
            q
        } else {
            q + self.nanos.signum()
        }
    }

    /// The value in units of 10^-9.
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// The format the quantity was written in.
    pub fn format(self) -> Format {
        self.format
    }

    /// Whether the quantity is zero.
    pub fn is_zero(self) -> bool {
        self.nanos == 0
    }
}

/// Parse a quantity into milli-units (rounded away from zero), as the scheduler counts
/// requests; `None` when malformed.
pub fn parse_milli(s: &str) -> Option<i128> {
    parse(s).map(Quantity::milli_value)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases after apimachinery's resource/quantity_test.go (TestQuantityParse,
    // TestQuantityString) and the scheduler's milli-value expectations.
    #[test]
    fn canonical_forms() {
        let cases = [
            ("0", "0"),
            ("0.5", "500m"),
            ("1", "1"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("1.5", "1500m"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1Ki", "1Ki"),
            ("1000", "1k"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("0.001", "1m"),
            ("1n", "1n"),
            ("1u", "1u"),
            ("-1", "-1"),
            ("+2G", "2G"),
            ("12345", "12345"),
        ];
        for (input, want) in cases {
            let q = parse(input).unwrap_or_else(|| panic!("{input} parses"));
            assert_eq!(q.canonical(), want, "{input}");
        }
        for bad in ["", "1.5.5", "m", "1Q", "1e", "1e+", ".", "--1", "1 Gi"] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn milli_values_round_away_from_zero() {
        assert_eq!(parse_milli("100m"), Some(100));
        assert_eq!(parse_milli("1"), Some(1000));
        assert_eq!(parse_milli("1Gi"), Some(1_073_741_824_000));
        assert_eq!(parse_milli("0.1m"), Some(1));
        assert_eq!(parse_milli("1n"), Some(1));
        assert_eq!(parse_milli("-1n"), Some(-1));
        assert_eq!(parse("1500m").map(Quantity::value), Some(2));
        assert_eq!(
            parse("2")
                .map(Quantity::round_up_milli)
                .map(Quantity::canonical)
                .as_deref(),
            Some("2")
        );
        assert_eq!(
            parse("1.0001")
                .map(Quantity::round_up_milli)
                .map(Quantity::canonical)
                .as_deref(),
            Some("1001m")
        );
    }

    // The API server's canonical forms (kube-apiserver 1.36 answers).
    #[test]
    fn quantities() {
        for (input, want) in [
            ("0.5", "500m"),
            ("1000m", "1"),
            ("1000", "1k"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("100Mi", "100Mi"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("129M", "129M"),
            ("128974848", "128974848"),
            ("0Mi", "0"),
            ("512", "512"),
            ("1536", "1536"),
            ("2048", "2048"),
            ("1Ki", "1Ki"),
            ("0.5Ki", "512"),
            ("1n", "1n"),
            ("-250m", "-250m"),
            ("12.5", "12500m"),
        ] {
            let q = parse(input).unwrap_or_else(|| panic!("parse {input}"));
            assert_eq!(q.canonical(), want, "{input}");
        }
        assert_eq!(parse("1n").unwrap().round_up_milli().canonical(), "1m");
        assert_eq!(
            parse("100.5m").unwrap().round_up_milli().canonical(),
            "101m"
        );
        for bad in ["", "abc", "1K", "1e", "1..5", "1.5.5", "--1", "1 Gi"] {
            assert!(parse(bad).is_none(), "{bad}");
        }
        // Binary quantities that are not whole multiples fall back to decimal.
        assert_eq!(parse("1.5Ki").unwrap().canonical(), "1536");
        assert_eq!(
            (parse("2").unwrap() + parse("500m").unwrap()).canonical(),
            "2500m"
        );
    }

    // The scheduler's view (milli-units, rounded up).
    #[test]
    fn quantities_parse_like_upstream() {
        let cases = [
            ("1", Some(1000)),
            ("100m", Some(100)),
            ("0.5", Some(500)),
            ("1.5k", Some(1_500_000)),
            ("1Ki", Some(1_024_000)),
            ("256Gi", Some(256 * (1i128 << 30) * 1000)),
            ("1e3", Some(1_000_000)),
            ("1E-3", Some(1)),
            ("1n", Some(1)), // rounded up
            ("110", Some(110_000)),
            ("-2", Some(-2000)),
            ("", None),
            ("abc", None),
            ("1.2.3", None),
            ("5Xi", None),
            ("1e999", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_milli(s), want, "{s}");
        }
    }
}
