//! Upstream's label and field selector test tables (`labels/selector_test.go`,
//! `fields/selector_test.go`, `LabelSelectorAsSelector` cases).

use serde_json::{json, Map, Value};

use super::fields::*;
use super::labels::*;
use crate::gofmt::quote as go_quote;

fn set(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect()
}

fn req(key: &str, op: LabelOp, vals: &[&str]) -> LabelRequirement {
    let mut v: Vec<String> = vals.iter().map(|s| s.to_string()).collect();
    v.sort();
    v.dedup();
    LabelRequirement::new(key, op, v).expect("valid requirement")
}

fn parse_err(s: &str) -> String {
    LabelSelector::parse(s).expect_err(s).0
}

const KEY_NAME_REGEX_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

// Port of upstream labels TestSelectorParse.
#[test]
fn labels_selector_parse() {
    let good = [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ];
    for s in good {
        let sel = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(sel.to_string(), s.replace(' ', ""), "restring of {s:?}");
    }
    for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
        assert!(LabelSelector::parse(s).is_err(), "{s} should fail");
    }
}

// Port of upstream labels TestDeterministicParse.
#[test]
fn labels_deterministic_parse() {
    let a = LabelSelector::parse("x=a,a=x").unwrap();
    let b = LabelSelector::parse("a=x,x=a").unwrap();
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.to_string(), "a=x,x=a");
}

fn expect_match(sel: &str, labels: &[(&str, &str)], want: bool) {
    let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
    assert_eq!(s.matches_map(&set(labels)), want, "{sel} vs {labels:?}");
}

// Port of upstream labels TestSelectorMatches (and TestEverything).
#[test]
fn labels_selector_matches() {
    expect_match("", &[("x", "y")], true);
    expect_match("x=y", &[("x", "y")], true);
    expect_match("x=y,z=w", &[("x", "y"), ("z", "w")], true);
    expect_match("x!=y,z!=w", &[("x", "z"), ("z", "a")], true);
    expect_match("notin=in", &[("notin", "in")], true);
    expect_match("x", &[("x", "z")], true);
    expect_match("!x", &[("y", "z")], true);
    expect_match("x>1", &[("x", "2")], true);
    expect_match("x<1", &[("x", "0")], true);
    expect_match("x=z", &[], false);
    expect_match("x=y", &[("x", "z")], false);
    expect_match("x=y,z=w", &[("x", "w"), ("z", "w")], false);
    expect_match("x!=y,z!=w", &[("x", "z"), ("z", "w")], false);
    expect_match("x", &[("y", "z")], false);
    expect_match("!x", &[("x", "z")], false);
    expect_match("x>1", &[("x", "0")], false);
    expect_match("x<1", &[("x", "2")], false);

    let ls = [("foo", "bar"), ("baz", "blah")];
    expect_match("foo=bar", &ls, true);
    expect_match("baz=blah", &ls, true);
    expect_match("foo=bar,baz=blah", &ls, true);
    expect_match("foo=blah", &ls, false);
    expect_match("baz=bar", &ls, false);
    expect_match("foo=bar,foobar=bar,baz=blah", &ls, false);

    let everything = LabelSelector::everything();
    assert!(everything.is_empty());
    assert!(everything.matches_map(&set(&[("x", "y")])));
    assert!(LabelSelector::parse("").unwrap().is_empty());
}

// Port of upstream labels TestLexer.
#[test]
fn labels_lexer() {
    let cases = [
        ("", Token::EndOfString),
        (",", Token::Comma),
        ("notin", Token::NotIn),
        ("in", Token::In),
        ("=", Token::Equals),
        ("==", Token::DoubleEquals),
        (">", Token::GreaterThan),
        ("<", Token::LessThan),
        ("!", Token::DoesNotExist),
        ("!=", Token::NotEquals),
        ("(", Token::OpenPar),
        (")", Token::ClosedPar),
        ("~", Token::Identifier),
        ("||", Token::Identifier),
    ];
    for (s, want) in cases {
        let (tok, lit) = Lexer::new(s).lex();
        assert_eq!(tok, want, "{s:?}");
        assert_eq!(lit, s, "{s:?}");
    }
}

// Port of upstream labels TestLexerSequence and TestParserLookahead.
#[test]
fn labels_lexer_sequence_and_lookahead() {
    use Token::*;
    let cases: Vec<(&str, Vec<Token>)> = vec![
        (
            "key in ( value )",
            vec![Identifier, In, OpenPar, Identifier, ClosedPar],
        ),
        (
            "key notin ( value )",
            vec![Identifier, NotIn, OpenPar, Identifier, ClosedPar],
        ),
        (
            "key in ( value1, value2 )",
            vec![
                Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar,
            ],
        ),
        ("key", vec![Identifier]),
        ("!key", vec![DoesNotExist, Identifier]),
        ("()", vec![OpenPar, ClosedPar]),
        ("", vec![]),
        (
            "x in (),y",
            vec![Identifier, In, OpenPar, ClosedPar, Comma, Identifier],
        ),
        (
            "== != (), = notin",
            vec![
                DoubleEquals,
                NotEquals,
                OpenPar,
                ClosedPar,
                Comma,
                Equals,
                NotIn,
            ],
        ),
        ("key>2", vec![Identifier, GreaterThan, Identifier]),
        ("key<1", vec![Identifier, LessThan, Identifier]),
    ];
    for (s, want) in cases {
        let mut lexer = Lexer::new(s);
        let mut got = Vec::new();
        loop {
            let (tok, _) = lexer.lex();
            if tok == EndOfString {
                break;
            }
            got.push(tok);
        }
        assert_eq!(got, want, "{s:?}");

        let mut p = Parser::new(s);
        assert_eq!(p.items.len(), want.len() + 1, "{s:?}");
        loop {
            let a = p.lookahead(Context::KeyAndOperator);
            let b = p.consume(Context::KeyAndOperator);
            if a.0 == EndOfString {
                break;
            }
            assert_eq!(a, b);
        }
    }
}

// Port of upstream labels TestRequirementConstructor.
#[test]
fn labels_requirement_constructor() {
    use LabelOp::*;
    let cases: Vec<(String, LabelOp, Vec<&str>, bool)> = vec![
        ("x".into(), In, vec![], false),
        ("x".into(), NotIn, vec![], false),
        ("x".into(), In, vec!["foo"], true),
        ("x".into(), NotIn, vec!["foo"], true),
        ("x".into(), Exists, vec![], true),
        ("x".into(), DoesNotExist, vec![], true),
        ("1foo".into(), In, vec!["bar"], true),
        ("1234".into(), In, vec!["bar"], true),
        ("y".into(), GreaterThan, vec!["1"], true),
        ("z".into(), LessThan, vec!["6"], true),
        ("foo".into(), GreaterThan, vec!["bar"], false),
        ("barz".into(), LessThan, vec!["blah"], false),
        ("a".repeat(254), Exists, vec![], false),
    ];
    for (key, op, vals, ok) in cases {
        let vals: Vec<String> = vals.into_iter().map(String::from).collect();
        let got = LabelRequirement::new(&key, op, vals);
        assert_eq!(got.is_ok(), ok, "{key} {op:?}: {got:?}");
    }
}

// Port of upstream labels TestToString (the case with a zero-valued
// Requirement is not representable here and is left out).
#[test]
fn labels_to_string() {
    use LabelOp::*;
    let cases = vec![
        (
            vec![
                req("x", In, &["abc", "def"]),
                req("y", NotIn, &["jkl"]),
                req("z", Exists, &[]),
            ],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            vec![
                req("x", NotIn, &["abc", "def"]),
                req("y", NotEquals, &["jkl"]),
                req("z", DoesNotExist, &[]),
            ],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            vec![
                req("x", NotIn, &["abc"]),
                req("y", In, &["jkl", "mno"]),
                req("z", NotIn, &[""]),
            ],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            vec![
                req("x", Equals, &["abc"]),
                req("y", DoubleEquals, &["jkl"]),
                req("z", NotEquals, &["a"]),
                req("z", Exists, &[]),
            ],
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            vec![
                req("x", GreaterThan, &["2"]),
                req("y", LessThan, &["8"]),
                req("z", Exists, &[]),
            ],
            "x>2,y<8,z",
        ),
    ];
    for (reqs, want) in cases {
        let sel = LabelSelector::from_requirements(reqs);
        assert_eq!(sel.to_string(), want);
    }
    // Values print sorted without changing the stored order.
    let r = LabelRequirement::new("k", In, vec!["b".into(), "a".into()]).unwrap();
    assert_eq!(r.to_string(), "k in (a,b)");
    assert_eq!(r.values(), ["b".to_string(), "a".to_string()]);
}

// Port of upstream labels TestRequirementSelectorMatching (minus the
// zero-valued Requirement case).
#[test]
fn labels_requirement_selector_matching() {
    use LabelOp::*;
    let cases = vec![
        (
            set(&[("x", "foo"), ("y", "baz")]),
            vec![req("x", In, &["foo"]), req("y", NotIn, &["alpha"])],
            true,
        ),
        (
            set(&[("x", "foo"), ("y", "baz")]),
            vec![req("x", In, &["foo"]), req("y", In, &["alpha"])],
            false,
        ),
        (
            set(&[("y", "")]),
            vec![req("x", NotIn, &[""]), req("y", Exists, &[])],
            true,
        ),
        (
            set(&[("y", "")]),
            vec![req("x", DoesNotExist, &[]), req("y", Exists, &[])],
            true,
        ),
        (
            set(&[("y", "")]),
            vec![req("x", NotIn, &[""]), req("y", DoesNotExist, &[])],
            false,
        ),
        (set(&[("y", "baz")]), vec![req("x", In, &[""])], false),
        (
            set(&[("z", "2")]),
            vec![req("z", GreaterThan, &["1"])],
            true,
        ),
        (
            set(&[("z", "v2")]),
            vec![req("z", GreaterThan, &["1"])],
            false,
        ),
    ];
    for (labels, reqs, want) in cases {
        let sel = LabelSelector::from_requirements(reqs);
        assert_eq!(sel.matches_map(&labels), want, "{sel} vs {labels:?}");
    }
}

// Port of upstream labels TestSetSelectorParser.
#[test]
fn labels_set_selector_parser() {
    use LabelOp::*;
    type Case = (&'static str, Option<Vec<LabelRequirement>>, bool);
    let cases: Vec<Case> = vec![
        ("", Some(vec![]), true),
        ("\rx", Some(vec![req("x", Exists, &[])]), true),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            Some(vec![req(
                "this-is-a-dns.domain.com/key-with-dash",
                Exists,
                &[],
            )]),
            true,
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            Some(vec![req(
                "this-is-another-dns.domain.com/key-with-dash",
                In,
                &["so", "what"],
            )]),
            true,
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            Some(vec![req(
                "0.1.2.domain/99",
                NotIn,
                &["10.10.100.1", "tick.tack.clock"],
            )]),
            true,
        ),
        (
            "foo  in\t (abc)",
            Some(vec![req("foo", In, &["abc"])]),
            true,
        ),
        (
            "x notin\n (abc)",
            Some(vec![req("x", NotIn, &["abc"])]),
            true,
        ),
        (
            "x  notin\t\t\t(abc,def)",
            Some(vec![req("x", NotIn, &["abc", "def"])]),
            true,
        ),
        (
            "x in (abc,def)",
            Some(vec![req("x", In, &["abc", "def"])]),
            true,
        ),
        ("x in (abc,)", Some(vec![req("x", In, &["abc", ""])]), true),
        ("x in ()", Some(vec![req("x", In, &[""])]), true),
        (
            "x notin (abc,,def),bar,z in (),w",
            Some(vec![
                req("bar", Exists, &[]),
                req("w", Exists, &[]),
                req("x", NotIn, &["abc", "", "def"]),
                req("z", In, &[""]),
            ]),
            true,
        ),
        ("x,y in (a)", None, true),
        ("x=a", Some(vec![req("x", Equals, &["a"])]), true),
        ("x>1", Some(vec![req("x", GreaterThan, &["1"])]), true),
        ("x<7", Some(vec![req("x", LessThan, &["7"])]), true),
        (
            "x=a,y!=b",
            Some(vec![req("x", Equals, &["a"]), req("y", NotEquals, &["b"])]),
            true,
        ),
        (
            "x=a,y!=b,z in (h,i,j)",
            Some(vec![
                req("x", Equals, &["a"]),
                req("y", NotEquals, &["b"]),
                req("z", In, &["h", "i", "j"]),
            ]),
            true,
        ),
        ("x=a||y=b", None, false),
        ("x,,y", None, false),
        (",x,y", None, false),
        ("x nott in (y)", None, false),
        ("x notin ( )", Some(vec![req("x", NotIn, &[""])]), true),
        (
            "x notin (, a)",
            Some(vec![req("x", NotIn, &["", "a"])]),
            true,
        ),
        ("a in (xyz),", None, false),
        ("a in (xyz)b notin ()", None, false),
        ("a ", Some(vec![req("a", Exists, &[])]), true),
        (
            "a in (x,y,notin, z,in)",
            Some(vec![req("a", In, &["in", "notin", "x", "y", "z"])]),
            true,
        ),
        ("a in (xyz abc)", None, false),
        ("a notin(", None, false),
        ("a (", None, false),
        ("(", None, false),
    ];
    for (input, want, valid) in cases {
        let got = LabelSelector::parse(input);
        assert_eq!(got.is_ok(), valid, "{input:?}: {got:?}");
        if let (Ok(sel), Some(want)) = (got, want) {
            assert_eq!(sel.requirements(), want.as_slice(), "{input:?}");
        }
    }
}

// Port of upstream labels TestRequiresExactMatch.
#[test]
fn labels_requires_exact_match() {
    use LabelOp::*;
    let one = |reqs| LabelSelector::from_requirements(reqs);
    assert_eq!(
        one(vec![req("key", In, &["value"])]).requires_exact_match("key"),
        Some("value")
    );
    assert_eq!(
        one(vec![req("key", In, &["value", "value2"])]).requires_exact_match("key"),
        None
    );
    assert_eq!(
        one(vec![
            req("key", In, &["value", "value1"]),
            req("key2", In, &["value2"])
        ])
        .requires_exact_match("key2"),
        Some("value2")
    );
    assert_eq!(
        one(vec![req("key", Equals, &["value"])]).requires_exact_match("key"),
        Some("value")
    );
    assert_eq!(
        one(vec![req("key", DoubleEquals, &["value"])]).requires_exact_match("key"),
        Some("value")
    );
    assert_eq!(
        one(vec![req("key", NotEquals, &["value"])]).requires_exact_match("key"),
        None
    );
}

// Exact upstream error messages for the string syntax.
#[test]
fn labels_parse_error_messages() {
    let cases = [
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b,", "unable to parse requirement: found '', expected: ',', or identifier"),
        ("a in (b,=", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!a", "unable to parse requirement: found '!', expected: identifier"),
        ("a,", "found '', expected: identifier after ','"),
    ];
    for (input, want) in cases {
        assert_eq!(parse_err(input), want, "{input:?}");
    }
}

// Key and value validation messages, as produced through Parse.
#[test]
fn labels_parse_validation_messages() {
    assert_eq!(
        parse_err("-a"),
        format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {KEY_NAME_REGEX_MSG}")
    );
    assert_eq!(
        parse_err("a/b/c=d"),
        "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    );
    assert_eq!(
        parse_err("Example.com/a"),
        "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    assert_eq!(
        parse_err("/a"),
        "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
    );
    assert_eq!(
        parse_err("a/"),
        format!("unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; {KEY_NAME_REGEX_MSG}")
    );
    let long = "a".repeat(64);
    assert_eq!(
        parse_err(&long),
        format!("unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 bytes")
    );
    assert_eq!(
        parse_err(&format!("x={long}")),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes")
    );
    let long_bad = format!("{long}-");
    assert_eq!(
        parse_err(&format!("x={long_bad}")),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"{long_bad}\": must be no more than 63 bytes; {VALUE_REGEX_MSG}")
    );
    assert_eq!(
        parse_err("x in (a,-b,c-)"),
        format!("unable to parse requirement: [values[0][x]: Invalid value: \"-b\": {VALUE_REGEX_MSG}, values[2][x]: Invalid value: \"c-\": {VALUE_REGEX_MSG}]")
    );
    assert_eq!(
        parse_err("x>-"),
        format!("unable to parse requirement: [values[0]: Invalid value: \"-\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-\": {VALUE_REGEX_MSG}]")
    );
    // Non-printable characters are quoted like Go's %q.
    assert_eq!(
        parse_err("a\u{1}b"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"a\\x01b\": {KEY_NAME_REGEX_MSG}"
        )
    );
    assert_eq!(
        parse_err("é"),
        format!("unable to parse requirement: <nil>: Invalid value: \"é\": {KEY_NAME_REGEX_MSG}")
    );
    assert_eq!(
        parse_err("a\u{a0}b"),
        format!("unable to parse requirement: <nil>: Invalid value: \"a\\u00a0b\": {KEY_NAME_REGEX_MSG}")
    );
    // Valid limits.
    let key = format!("{}/{}", "a".repeat(253), "b".repeat(63));
    assert!(LabelSelector::parse(&format!("{key}={}", "c".repeat(63))).is_ok());
}

// Port of upstream meta/v1 TestLabelSelectorAsSelector.
#[test]
fn label_selector_as_selector() {
    let ml = json!({"foo": "bar"});
    let me = json!([{"key": "baz", "operator": "In", "values": ["qux", "norf"]}]);
    let cases: Vec<(Value, Option<&str>)> = vec![
        (json!({}), Some("")),
        (json!({"matchLabels": ml}), Some("foo=bar")),
        (json!({"matchExpressions": me}), Some("baz in (norf,qux)")),
        (
            json!({"matchLabels": ml, "matchExpressions": me}),
            Some("baz in (norf,qux),foo=bar"),
        ),
        (
            json!({"matchExpressions": [{"key": "baz", "operator": "Exists", "values": ["qux", "norf"]}]}),
            None,
        ),
        (
            json!({"matchExpressions": [{"key": "baz", "operator": "In", "values": []}]}),
            None,
        ),
        (
            json!({"matchExpressions": [{"key": "baz", "operator": "Gt", "values": ["1"]}]}),
            None,
        ),
    ];
    for (input, want) in cases {
        let got = LabelSelector::from_label_selector_json(&input);
        match want {
            Some(s) => assert_eq!(got.expect("ok").to_string(), s, "{input}"),
            None => assert!(got.is_err(), "{input}"),
        }
    }
    let nothing = LabelSelector::from_label_selector_json(&Value::Null).unwrap();
    assert!(nothing.matches_nothing());
    assert!(!nothing.is_empty());
    assert!(!nothing.matches_map(&set(&[("any", "label")])));
    assert_eq!(nothing.to_string(), "");
    let everything = LabelSelector::from_label_selector_json(&json!({})).unwrap();
    assert!(everything.is_empty());
    assert!(everything.matches_map(&set(&[("any", "label")])));
}

#[test]
fn label_selector_json_matching_and_errors() {
    let sel = LabelSelector::from_label_selector_json(&json!({
        "matchLabels": {"app": "web", "tier": "frontend"},
        "matchExpressions": [
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "team", "operator": "Exists", "values": null},
        ]
    }))
    .unwrap();
    assert_eq!(
        sel.to_string(),
        "app=web,!canary,env notin (dev),team,tier=frontend"
    );
    assert!(sel.matches_map(&set(&[("app", "web"), ("tier", "frontend"), ("team", "a")])));
    assert!(!sel.matches_map(&set(&[
        ("app", "web"),
        ("tier", "frontend"),
        ("team", "a"),
        ("env", "dev")
    ])));
    assert!(!sel.matches_map(&set(&[
        ("app", "web"),
        ("tier", "frontend"),
        ("team", "a"),
        ("canary", "")
    ])));

    let err = |v: Value| LabelSelector::from_label_selector_json(&v).unwrap_err().0;
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})),
        "\"Foo\" is not a valid pod selector operator"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a"}]})),
        "\"\" is not a valid pod selector operator"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]})),
        "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist"
    );
    assert_eq!(
        err(json!({"matchExpressions": [{"key": "-a", "operator": "In", "values": ["-"]}]})),
        format!("[key: Invalid value: \"-a\": {KEY_NAME_REGEX_MSG}, values[0][-a]: Invalid value: \"-\": {VALUE_REGEX_MSG}]")
    );
    assert_eq!(
        err(json!({"matchLabels": {"a": "b c"}})),
        format!("values[0][a]: Invalid value: \"b c\": {VALUE_REGEX_MSG}")
    );
    assert_eq!(
        err(json!({"matchLabels": {"": "x"}})),
        format!("key: Invalid value: \"\": name part must be non-empty; {KEY_NAME_REGEX_MSG}")
    );
    assert_eq!(
        err(json!({"matchLabels": {"a": 1}})),
        "json: cannot unmarshal number into Go struct field LabelSelector.matchLabels of type string"
    );
    assert_eq!(
        err(json!({"matchExpressions": {}})),
        "json: cannot unmarshal object into Go struct field LabelSelector.matchExpressions of type []v1.LabelSelectorRequirement"
    );
    assert_eq!(
        err(json!([])),
        "json: cannot unmarshal array into Go value of type v1.LabelSelector"
    );
    assert!(LabelSelector::from_label_selector_json(&json!({"matchExpressions": ["x"]})).is_err());
    assert!(LabelSelector::from_label_selector_json(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})
    )
    .is_err());
    assert!(
        LabelSelector::from_label_selector_json(&json!({"matchExpressions": [{"key": 5}]}))
            .is_err()
    );
}

#[test]
fn labels_matches_with_closure_and_non_string_values() {
    let sel = LabelSelector::parse("a=1,b").unwrap();
    assert!(sel.matches(|k| match k {
        "a" => Some("1"),
        "b" => Some(""),
        _ => None,
    }));
    let mut labels = set(&[("a", "1")]);
    labels.insert("b".into(), json!(5));
    assert!(!sel.matches_map(&labels));
    assert!(LabelSelector::parse("x>9223372036854775806")
        .unwrap()
        .matches(|_| Some("9223372036854775807")));
    assert!(!LabelSelector::parse("x<1")
        .unwrap()
        .matches(|_| Some("99999999999999999999")));
}

// Odd inputs never panic and behave like upstream's byte-level lexer.
#[test]
fn labels_robustness() {
    let inputs: Vec<String> = vec![
        "((((((".into(),
        "))))".into(),
        "a in ((b))".into(),
        "a in (b))".into(),
        "a in (b,(c)".into(),
        "!!!!!".into(),
        "!=!=!=".into(),
        "<<>>".into(),
        "a in".into(),
        "a notin".into(),
        "a=".into(),
        "a==".into(),
        "a!=".into(),
        "a>".into(),
        "ключ=значение".into(),
        "日本=語".into(),
        "🦀 in (🦀)".into(),
        "a\u{0}b".into(),
        "a,\u{0}b".into(),
        "\u{0}".into(),
        "a=b\u{0} c".into(),
        "\t\r\n".into(),
        ",".into(),
        ",,,".into(),
        "a in (,,,)".into(),
        "x".repeat(1 << 20),
        format!("a in ({})", "v,".repeat(100_000)),
        "(".repeat(100_000),
        format!(
            "x in ({})",
            (0..50_000)
                .map(|i| format!("-{i}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        "a,".repeat(50_000),
        "é=é".into(),
        "a=\u{202e}".into(),
    ];
    for s in &inputs {
        let _ = LabelSelector::parse(s).map(|sel| sel.to_string());
        let _ = FieldSelector::parse(s).map(|sel| sel.to_string());
    }
    // NUL ends the input where a token starts.
    assert_eq!(
        parse_err("a, \u{0}b"),
        "found '', expected: identifier after ','"
    );
    // ...but a NUL right after an operator or inside a word only splits.
    assert_eq!(LabelSelector::parse("a,\u{0}b").unwrap().to_string(), "a,b");
    assert_eq!(
        parse_err("a\u{0}b"),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(
        LabelSelector::parse("\u{0}garbage").unwrap().to_string(),
        ""
    );
    assert_eq!(
        LabelSelector::parse("a in (,,,)").unwrap().to_string(),
        "a in ()"
    );
    assert_eq!(
        LabelSelector::parse(&format!("a in ({})", "v,".repeat(1000)))
            .unwrap()
            .to_string(),
        "a in (,v)"
    );
}

#[test]
fn go_quote_matches_strconv_quote() {
    assert_eq!(go_quote(""), "\"\"");
    assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_eq!(
        go_quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"),
        "\"\\a\\b\\f\\n\\r\\t\\v\""
    );
    assert_eq!(go_quote("\u{0}\u{7f}"), "\"\\x00\\x7f\"");
    assert_eq!(go_quote("\u{85}"), "\"\\u0085\"");
    assert_eq!(go_quote("日本 🦀"), "\"日本 🦀\"");
    assert_eq!(go_quote("\u{feff}\u{10ffff}"), "\"\\ufeff\\U0010ffff\"");
}

// Port of upstream fields TestSplitTerms.
#[test]
fn fields_split_terms() {
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("a", vec!["a"]),
        ("a=avalue", vec!["a=avalue"]),
        ("a=avalue,b=bvalue", vec!["a=avalue", "b=bvalue"]),
        (
            "a=avalue,b==bvalue,c!=cvalue",
            vec!["a=avalue", "b==bvalue", "c!=cvalue"],
        ),
        ("", vec![]),
        ("a=a,", vec!["a=a", ""]),
        (",a=a", vec!["", "a=a"]),
        (r"k=\,,k2=v2", vec![r"k=\,", "k2=v2"]),
        (r"k=\\,k2=v2", vec![r"k=\\", "k2=v2"]),
        (r"k=\\\,,k2=v2", vec![r"k=\\\,", "k2=v2"]),
        (r"k=\a\b\", vec![r"k=\a\b\"]),
        (r"k=\", vec![r"k=\"]),
        ("함=수,목=록", vec!["함=수", "목=록"]),
    ];
    for (input, want) in cases {
        assert_eq!(split_terms(input), want, "{input:?}");
    }
}

// Port of upstream fields TestSplitTerm.
#[test]
fn fields_split_term() {
    let cases = [
        ("a=value", Some(("a", "=", "value"))),
        ("b==value", Some(("b", "==", "value"))),
        ("c!=value", Some(("c", "!=", "value"))),
        ("", None),
        ("a", None),
        (r"k=\,", Some(("k", "=", r"\,"))),
        (r"k=\=", Some(("k", "=", r"\="))),
        (r"k=\\\a\b\=\,\", Some(("k", "=", r"\\\a\b\=\,\"))),
        ("함=수", Some(("함", "=", "수"))),
    ];
    for (input, want) in cases {
        assert_eq!(split_term(input), want, "{input:?}");
    }
}

// Port of upstream fields TestEscapeValue.
#[test]
fn fields_escape_value() {
    let cases = [
        ("", ""),
        ("a", "a"),
        ("=", r"\="),
        (",", r"\,"),
        (r"\", r"\\"),
        (r"\=\,\", r"\\\=\\\,\\"),
    ];
    for (raw, escaped) in cases {
        assert_eq!(escape_field_value(raw), escaped);
        assert_eq!(unescape_field_value(escaped).unwrap(), raw);
    }
    for bad in [r"\", r"\\\", r"\a"] {
        let e = unescape_field_value(bad).unwrap_err();
        assert!(e.0.contains("invalid escape sequence"), "{bad}: {e}");
    }
    assert_eq!(
        unescape_field_value(r"\a").unwrap_err().0,
        r"invalid field selector: invalid escape sequence: \a"
    );
    assert_eq!(
        unescape_field_value("a\\").unwrap_err().0,
        r"invalid field selector: invalid escape sequence: \"
    );
    assert_eq!(
        unescape_field_value("a=b").unwrap_err().0,
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        unescape_field_value("a,b").unwrap_err().0,
        "invalid field selector: unescaped character in value: 44"
    );
}

// Port of upstream fields TestSelectorParse and TestDeterministicParse.
#[test]
fn fields_selector_parse() {
    for s in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
        let sel = FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(sel.to_string(), s);
    }
    for s in [
        "x=a||y=b",
        "x==a==b",
        "x=a,b",
        "x in (a)",
        "x in (a,b,c)",
        "x",
    ] {
        assert!(FieldSelector::parse(s).is_err(), "{s}");
    }
    let a = FieldSelector::parse("x=a,a=x").unwrap();
    let b = FieldSelector::parse("a=x,x=a").unwrap();
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.to_string(), "a=x,x=a");
}

#[test]
fn fields_error_messages_and_structure() {
    let err = |s: &str| FieldSelector::parse(s).unwrap_err().0;
    assert_eq!(
        err("x=a,b"),
        "invalid selector: 'x=a,b'; can't understand 'b'"
    );
    assert_eq!(err("x"), "invalid selector: 'x'; can't understand 'x'");
    assert_eq!(
        err("x in (a)"),
        "invalid selector: 'x in (a)'; can't understand 'x in (a)'"
    );
    assert_eq!(
        err("x==a==b"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        err(r"x=a\b"),
        r"invalid field selector: invalid escape sequence: \b"
    );

    let sel = FieldSelector::parse("metadata.name==foo,status.phase!=Running,spec.x=").unwrap();
    assert_eq!(
        sel.requirements(),
        [
            FieldRequirement {
                field: "metadata.name".into(),
                op: FieldOp::Equals,
                value: "foo".into()
            },
            FieldRequirement {
                field: "spec.x".into(),
                op: FieldOp::Equals,
                value: "".into()
            },
            FieldRequirement {
                field: "status.phase".into(),
                op: FieldOp::NotEquals,
                value: "Running".into()
            },
        ]
    );
    assert_eq!(sel.requires_exact_match("metadata.name"), Some("foo"));
    assert_eq!(sel.requires_exact_match("status.phase"), None);
    assert_eq!(
        sel.to_string(),
        "metadata.name=foo,spec.x=,status.phase!=Running"
    );

    // Terms with an empty field and value are dropped, like upstream.
    assert!(FieldSelector::parse("=").unwrap().is_empty());
    assert!(FieldSelector::parse("!=,,").unwrap().is_empty());
    assert!(FieldSelector::parse(",,,").unwrap().is_empty());
    assert!(!FieldSelector::parse("=x").unwrap().is_empty());
    // Spaces are kept verbatim.
    let sel = FieldSelector::parse("a = b").unwrap();
    assert_eq!(sel.requirements()[0].field, "a ");
    assert_eq!(sel.requirements()[0].value, " b");
}

// Port of upstream fields TestSelectorMatches.
#[test]
fn fields_selector_matches() {
    fn check(sel: &str, fields: &[(&str, &str)], want: bool) {
        let s = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        let got = s.matches(|f| {
            fields
                .iter()
                .find(|(k, _)| *k == f)
                .map(|(_, v)| v.to_string())
        });
        assert_eq!(got, want, "{sel} vs {fields:?}");
    }
    check("", &[("x", "y")], true);
    check("x=y", &[("x", "y")], true);
    check("x=y,z=w", &[("x", "y"), ("z", "w")], true);
    check("x!=y,z!=w", &[("x", "z"), ("z", "a")], true);
    check("notin=in", &[("notin", "in")], true);
    check("x=y", &[("x", "z")], false);
    check("x=y,z=w", &[("x", "w"), ("z", "w")], false);
    check("x!=y,z!=w", &[("x", "z"), ("z", "w")], false);

    let fs = [("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")];
    check("foo=bar", &fs, true);
    check("baz=blah", &fs, true);
    check("foo=bar,baz=blah", &fs, true);
    check(r"foo=bar,baz=blah,complex=\=value\\\,\\", &fs, true);
    check("foo=blah", &fs, false);
    check("baz=bar", &fs, false);
    check("foo=bar,foobar=bar,baz=blah", &fs, false);
    // A missing field counts as "".
    check("missing=", &[], true);
    check("missing!=", &[], false);
    check("missing!=x", &[], true);
}

// Cases after apimachinery's TestLabelSelectorAsSelector, on the typed selector.
#[test]
fn typed_label_selectors() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    use std::collections::BTreeMap;
    let labels = |l: &[(&str, &str)]| -> BTreeMap<String, String> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let expr =
        |key: &str, operator: &str, values: Option<Vec<&str>>| meta::LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.map(|v| v.into_iter().map(String::from).collect()),
        };
    let sel = meta::LabelSelector {
        match_labels: Some(BTreeMap::from([("app".into(), "web".into())])),
        match_expressions: Some(vec![
            expr("tier", "In", Some(vec!["fe", "be"])),
            expr("env", "NotIn", Some(vec!["prod"])),
            expr("team", "Exists", None),
            expr("legacy", "DoesNotExist", None),
        ]),
    };
    let s = LabelSelector::from_meta(&sel).expect("valid");
    assert!(s.matches_labels(&labels(&[("app", "web"), ("tier", "fe"), ("team", "a")])));
    assert!(!s.matches_labels(&labels(&[
        ("app", "web"),
        ("tier", "fe"),
        ("team", "a"),
        ("env", "prod")
    ])));
    assert!(!s.matches_labels(&labels(&[("app", "web"), ("tier", "db"), ("team", "a")])));
    assert!(!s.matches_labels(&labels(&[("app", "web"), ("tier", "fe")])));
    assert!(!s.matches_labels(&labels(&[
        ("app", "web"),
        ("tier", "fe"),
        ("team", "a"),
        ("legacy", "")
    ])));
    assert_eq!(
        s.to_string(),
        "app=web,env notin (prod),!legacy,team,tier in (be,fe)"
    );
    let empty = LabelSelector::from_meta(&meta::LabelSelector::default()).expect("valid");
    assert!(empty.is_empty() && empty.matches_labels(&labels(&[])));
    let bad = meta::LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![expr("k", "In", None)]),
    };
    assert_eq!(
        LabelSelector::from_meta(&bad).unwrap_err().to_string(),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    let op = meta::LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![expr("k", "Bad", None)]),
    };
    assert_eq!(
        LabelSelector::from_meta(&op).unwrap_err().to_string(),
        "\"Bad\" is not a valid label selector operator"
    );
    let set = LabelSelector::from_match_labels([("a", "1")]);
    assert!(set.matches_labels(&labels(&[("a", "1"), ("b", "2")])));
}
