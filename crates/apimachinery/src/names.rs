//! Name and label rules (`k8s.io/apimachinery/pkg/util/validation`,
//! `.../api/validate/content`, `.../api/validation/path`): each check returns upstream's
//! messages, empty when the value is valid, so callers can wrap them in field errors.
//!
//! ```
//! use coxswain_apimachinery::names;
//! assert!(names::is_dns1123_subdomain("web.example.com").is_empty());
//! assert_eq!(names::is_dns1123_label("a.b"), ["must not contain dots"]);
//! assert!(names::matches_dns1123_label("web-1"));
//! ```

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `DNS1123LabelMaxLength`.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// `DNS1123SubdomainMaxLength`.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// `validation.RegexError`: the message, examples and the regex upstream validates with.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Whether `v` has the syntax of a DNS-1123 label (length not checked).
pub fn matches_dns1123_label(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// Whether `v` has the syntax of a DNS-1123 subdomain (length not checked).
pub fn matches_dns1123_subdomain(v: &str) -> bool {
    v.split('.').all(matches_dns1123_label)
}

fn matches_label_key_name(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
}

/// `IsDNS1123Label`.
pub fn is_dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    if !matches_dns1123_label(v) {
        if matches_dns1123_subdomain(v) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

fn subdomain_errs(v: &str, unit: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} {unit}"
        ));
    }
    if !matches_dns1123_subdomain(v) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(v: &str) -> Vec<String> {
    subdomain_errs(v, "characters")
}

/// `IsDNS1035Label`.
pub fn is_dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    let b = v.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-');
    if !ok {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `content.IsLabelKey` (`IsQualifiedName`): an optional DNS subdomain prefix and `/`,
/// then a name of at most 63 characters.
pub fn is_qualified_name(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let name = match v.split_once('/') {
        None => v,
        Some((_, suffix)) if suffix.contains('/') => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
        Some((prefix, suffix)) => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in subdomain_errs(prefix, "bytes") {
                    errs.push(format!("prefix part {m}"));
                }
            }
            suffix
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `content.IsLabelValue`: empty, or at most 63 characters of `[-A-Za-z0-9_.]` that
/// start and end with an alphanumeric.
pub fn is_label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !v.is_empty() && !matches_label_key_name(v) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsConfigMapKey` (also Secret keys).
pub fn is_config_map_key(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    let ok = !v.is_empty()
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.' || c == b'_');
    if !ok {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if v == "." {
        errs.push("must not be '.'".to_string());
    } else if v == ".." {
        errs.push("must not be '..'".to_string());
    } else if v.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// `path.IsValidPathSegmentName` (`prefix` false) / `IsValidPathSegmentPrefix` (true).
pub fn is_path_segment(v: &str, prefix: bool) -> Vec<String> {
    if !prefix && (v == "." || v == "..") {
        return vec![format!("may not be '{v}'")];
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if v.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// `IsValidPortName` (an IANA service name).
pub fn is_port_name(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if v.is_empty() || !v.bytes().all(|c| is_lower_alnum(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !v.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if v.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if v.starts_with('-') || v.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `IsValidPercent`: digits followed by `%`.
pub fn is_percent(v: &str) -> Vec<String> {
    let ok =
        v.len() >= 2 && v.ends_with('%') && v[..v.len() - 1].bytes().all(|c| c.is_ascii_digit());
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid percent string must be a numeric string followed by an ending '%'",
            "[0-9]+%",
            &["1%", "93%"],
        )]
    }
}

/// `IsRelaxedEnvVarName` (RelaxedEnvironmentVariableValidation is GA).
pub fn is_env_var_name(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if v.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_string(),
        );
    }
    errs
}

/// The rule an object's `metadata.name` follows (upstream's `ValidateNameFunc`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: most kinds, custom resources.
    Subdomain,
    /// `NameIsDNSLabel`: Namespace, StatefulSet.
    Label,
    /// `NameIsDNS1035Label`: Service.
    Label1035,
    /// `ValidatePathSegmentName`: RBAC kinds and kinds with only the generic check.
    PathSegment,
}

impl NameRule {
    /// Applies the rule; `prefix` is true for `generateName` (a trailing dash is
    /// allowed, as upstream's `maskTrailingDash`).
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name =
            if prefix && self != NameRule::PathSegment && name.len() > 1 && name.ends_with('-') {
                masked = format!("{}a", &name[..name.len() - 2]);
                masked.as_str()
            } else {
                name
            };
        match self {
            NameRule::Subdomain => is_dns1123_subdomain(name),
            NameRule::Label => is_dns1123_label(name),
            NameRule::Label1035 => is_dns1035_label(name),
            NameRule::PathSegment => is_path_segment(name, prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases after apimachinery's util/validation TestIsDNS1123Label and friends.
    #[test]
    fn dns_names() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "1-2",
        ] {
            assert!(is_dns1123_label(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "A",
            "ABC",
            "aBc",
            "a_1",
            "a.1",
            "-1",
            "1-",
            &"a".repeat(64),
        ] {
            assert!(!is_dns1123_label(bad).is_empty(), "{bad}");
        }
        for good in ["a.b.c", "1.2.3", "a-1.b-2"] {
            assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
        }
        for bad in ["", "a..b", ".a", "a.", "A.b", &"a".repeat(254)] {
            assert!(!is_dns1123_subdomain(bad).is_empty(), "{bad}");
        }
        assert!(is_dns1035_label("a-1").is_empty());
        assert!(!is_dns1035_label("1-a").is_empty());
    }

    #[test]
    fn qualified_names_and_label_values() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "example.com/name",
            "a/b",
        ] {
            assert!(is_qualified_name(good).is_empty(), "{good}");
        }
        assert_eq!(is_qualified_name("/a"), ["prefix part must be non-empty"]);
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(!is_qualified_name("-a").is_empty());
        assert!(is_label_value("").is_empty());
        assert!(is_label_value("my_value").is_empty());
        assert!(!is_label_value("-x").is_empty());
        assert_eq!(
            is_label_value(&"a".repeat(64)),
            ["must be no more than 63 bytes"]
        );
    }

    #[test]
    fn other_rules() {
        assert!(is_config_map_key("key.name").is_empty());
        assert_eq!(is_config_map_key(".."), ["must not be '..'"]);
        assert!(is_port_name("http").is_empty());
        assert!(!is_port_name("1234").is_empty());
        assert!(is_percent("50%").is_empty());
        assert!(!is_percent("%").is_empty());
        assert!(is_env_var_name("A_B").is_empty());
        assert!(!is_env_var_name("A=B").is_empty());
        assert_eq!(is_path_segment("..", false), ["may not be '..'"]);
        assert!(NameRule::Subdomain.check("gen-", true).is_empty());
        assert!(!NameRule::Subdomain.check("gen-", false).is_empty());
    }

    // Ported from staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go
    // (TestIsDNS1123Label, TestIsDNS1123Subdomain, TestIsQualifiedName, TestIsValidLabelValue).
    #[test]
    fn format_predicates() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            &"a".repeat(63),
        ] {
            assert!(is_dns1123_label(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            &"a".repeat(64),
        ] {
            assert!(!is_dns1123_label(bad).is_empty(), "{bad:?}");
        }
        for good in [
            "a",
            "ab",
            "a.a",
            "a-1.b-2",
            "0.0",
            "1--a--b--2.c",
            &"a".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "A",
            "a.",
            ".a",
            "a..b",
            "a_b",
            "a@b",
            "a.-b",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad).is_empty(), "{bad:?}");
        }
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/b", "a".repeat(253)),
        ] {
            assert!(is_qualified_name(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
        ] {
            assert!(!is_qualified_name(bad).is_empty(), "{bad}");
        }
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "",
            "Uppercase_Is_OK_123",
            &"a".repeat(63),
        ] {
            assert!(is_label_value(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            &"a".repeat(64),
        ] {
            assert!(!is_label_value(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn error_messages_of_format_checks() {
        assert_eq!(
            is_dns1123_label("a.b"),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(
            is_dns1123_label("A"),
            vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 bytes".to_string()]
        );
        assert_eq!(
            is_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 bytes".to_string()]
        );
    }

    #[test]
    fn regex_error_examples() {
        assert_eq!(
            regex_error("m", "f", &["a", "b"]),
            "m (e.g. 'a',  or 'b', regex used for validation is 'f')"
        );
        assert_eq!(
            regex_error("m", "f", &[]),
            "m (regex used for validation is 'f')"
        );
    }
}
