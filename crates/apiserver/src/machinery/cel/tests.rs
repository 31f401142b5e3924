//! Cases ported from upstream `schema/cel/validation_test.go`.

use super::{check_rules, validate, Cause};
use serde_json::{json, Value};

/// Schema with properties val1..valN of the given types and one rule at the root.
fn schemas(types: &[Value], rule: &str) -> Value {
    let mut props = serde_json::Map::new();
    for (i, t) in types.iter().enumerate() {
        props.insert(format!("val{}", i + 1), t.clone());
    }
    json!({"type": "object", "properties": props, "x-kubernetes-validations": [{"rule": rule}]})
}

fn objs(vals: &[Value]) -> Value {
    let mut m = serde_json::Map::new();
    for (i, v) in vals.iter().enumerate() {
        m.insert(format!("val{}", i + 1), v.clone());
    }
    Value::Object(m)
}

fn run(types: &[Value], vals: &[Value], valid: &[&str], errors: &[(&str, &str)]) {
    let obj = objs(vals);
    for r in valid {
        let errs = validate(&schemas(types, r), &obj, None);
        assert!(errs.is_empty(), "rule {r} expected valid, got {errs:?}");
    }
    for (r, want) in errors {
        let errs = validate(&schemas(types, r), &obj, None);
        assert_eq!(errs.len(), 1, "rule {r}: {errs:?}");
        assert!(
            errs[0].message.contains(want),
            "rule {r}: want {want:?} in {:?}",
            errs[0].message
        );
    }
}

fn t(ty: &str) -> Value {
    json!({"type": ty})
}

#[test]
fn integers() {
    let i = t("integer");
    run(
        &[
            i.clone(),
            i.clone(),
            json!({"type":"integer","format":"int32"}),
        ],
        &[json!(i64::MAX), json!(i64::MAX), json!(i32::MAX)],
        &[
            "self.val1 == self.val2",
            "self.val1 == 9223372036854775807",
            "type(self.val1) == int",
            "self.val3 + 1 == 2147483647 + 1",
            "self.val1 >= self.val3",
        ],
        &[
            ("self.val1 + 1 == 0", "integer overflow"),
            ("1 / 0 == 1 / 0", "division by zero"),
        ],
    );
}

#[test]
fn numbers_and_cross_type() {
    let n = t("number");
    let i = t("integer");
    run(
        &[i.clone(), i.clone(), i, n.clone(), n],
        &[json!(5), json!(10), json!(15), json!(10.0), json!(10)],
        &[
            "double(self.val1) < self.val4",
            "double(self.val2) == self.val4",
            "self.val1 < int(self.val4)",
            "self.val2 == int(self.val4)",
            "self.val1 < self.val4",
            "self.val3 > self.val5",
            "type(self.val5) == double",
            "self.val5 == 10.0",
            "5 < 10.0",
            "double(10) == 10.0",
        ],
        &[],
    );
}

#[test]
fn unicode_strings() {
    let s = t("string");
    run(
        &[s.clone(), s],
        &[json!("Rook takes 👑"), json!("Rook takes 👑")],
        &[
            "self.val1 == self.val2",
            "self.val1 == 'Rook takes 👑'",
            "self.val1.startsWith('Rook')",
            "!self.val1.startsWith('knight')",
            "self.val1.contains('takes')",
            "self.val1.endsWith('👑')",
            "self.val1.matches('^[^0-9]*$')",
            "!self.val1.matches('^[0-9]*$')",
            "type(self.val1) == string",
            "size(self.val1) == 12",
            "self.val1.charAt(3) == 'k'",
            "self.val1.indexOf('o') == 1",
            "self.val1.indexOf('o', 2) == 2",
            "self.val1.replace(' ', 'x') == 'Rookxtakesx👑'",
            "self.val1.replace(' ', 'x', 1) == 'Rookxtakes 👑'",
            "self.val1.split(' ') == ['Rook', 'takes', '👑']",
            "self.val1.split(' ', 2) == ['Rook', 'takes 👑']",
            "self.val1.substring(5) == 'takes 👑'",
            "self.val1.substring(0, 4) == 'Rook'",
            "self.val1.substring(4, 10).trim() == 'takes'",
            "self.val1.upperAscii() == 'ROOK TAKES 👑'",
            "self.val1.lowerAscii() == 'rook takes 👑'",
            "'%o %o %o'.format([7, 8, 9]) == '7 10 11'",
            "'%b %b %b'.format([7, 8, 9]) == '111 1000 1001'",
        ],
        &[(
            "self.val1.matches(')')",
            "compile error: compilation failed: ERROR: <input>:1:19: invalid matches argument",
        )],
    );
}

#[test]
fn escaped_strings_bytes_bools() {
    let s = t("string");
    run(
        &[s.clone(), s],
        &[json!("l1\nl2"), json!("l1\nl2")],
        &[
            "self.val1 == self.val2",
            "self.val1 == 'l1\\nl2'",
            "self.val1 == '''l1\nl2'''",
        ],
        &[],
    );
    let b = json!({"type":"string","format":"byte"});
    run(
        &[b.clone(), b],
        &[json!("QUI="), json!("QUI=")],
        &[
            "self.val1 == self.val2",
            "self.val1 == b'AB'",
            "self.val1 == bytes('AB')",
            "self.val1 == b'\\x41\\x42'",
            "type(self.val1) == bytes",
            "size(self.val1) == 2",
        ],
        &[],
    );
    let bo = t("boolean");
    run(
        &[bo.clone(), bo.clone(), bo.clone(), bo],
        &[json!(true), json!(true), json!(false), json!(false)],
        &[
            "self.val1 == self.val2",
            "self.val1 != self.val4",
            "type(self.val1) == bool",
        ],
        &[],
    );
}

#[test]
fn durations_and_timestamps() {
    let d = json!({"type":"string","format":"duration"});
    run(
        &[d.clone(), d],
        &[json!("1h2m3s4ms"), json!("1h2m3s4ms")],
        &[
            "self.val1 == duration('1h2m3s4ms')",
            "self.val1 == duration('1h2m') + duration('3s4ms')",
            "self.val1.getHours() == 1",
            "self.val1.getMinutes() == 62",
            "self.val1.getSeconds() == 3723",
            "self.val1.getMilliseconds() == 3723004",
            "type(self.val1) == google.protobuf.Duration",
        ],
        &[
            (
                "duration('1')",
                "compilation failed: ERROR: <input>:1:10: invalid duration argument",
            ),
            ("duration('1d')", "invalid duration argument"),
        ],
    );
    let ts = json!({"type":"string","format":"date-time"});
    let date = json!({"type":"string","format":"date"});
    run(
        &[ts, date],
        &[
            json!("2011-08-18T19:03:37.010000000+01:00"),
            json!("2011-08-18"),
        ],
        &[
            "self.val1 == timestamp('2011-08-18T19:03:37.010+01:00')",
            "self.val1.getFullYear() == 2011",
            "self.val1.getMonth() == 7",
            "self.val1.getDayOfMonth() == 17",
            "self.val1.getHours() == 18",
            "self.val1.getMilliseconds() == 10",
            "self.val2 == timestamp('2011-08-18T00:00:00.000+00:00')",
            "self.val1 - self.val2 == duration('18h3m37s10ms')",
            "type(self.val1) == google.protobuf.Timestamp",
        ],
        &[
            (
                "timestamp('1000-00-00T00:00:00Z')",
                "compilation failed: ERROR: <input>:1:11: invalid timestamp",
            ),
            ("timestamp(-62135596801)", "invalid timestamp"),
        ],
    );
}

#[test]
fn lists_and_maps() {
    let schema = json!({"type":"object","properties":{
        "array": {"type":"array","items":{"type":"integer"}},
        "set": {"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
        "m": {"type":"object","additionalProperties":{"type":"string"}},
        "emptyInts": {"type":"array","items":{"type":"integer"}},
        "listMap": {"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"string"},"v2":{"type":"string"}}}}
    }});
    let obj = json!({"array":[1,2,3],"set":["a","b"],"m":{"a":"x","b":"y"},"emptyInts":[],"listMap":[{"k":"a","v":"1"},{"k":"b","v":"2"}]});
    let valid = [
        "self.array.all(x, x > 0)",
        "self.array.exists(x, x == 2)",
        "self.array.exists_one(x, x == 2)",
        "self.array.map(x, x * 2) == [2, 4, 6]",
        "self.array.filter(x, x > 1) == [2, 3]",
        "self.array.map(x, x > 1, x * 10) == [20, 30]",
        "size(self.array) == 3",
        "self.array.size() == 3",
        "2 in self.array",
        "!(5 in self.array)",
        "self.array[0] == 1",
        "self.array.isSorted()",
        "self.array.sum() == 6",
        "self.array.min() == 1",
        "self.array.max() == 3",
        "self.array.indexOf(2) == 1",
        "self.set == ['b', 'a']",
        "self.set + ['a', 'c'] == ['a', 'b', 'c']",
        "self.m.a == 'x'",
        "self.m['b'] == 'y'",
        "'a' in self.m",
        "self.m.all(k, self.m[k].size() == 1)",
        "self.listMap.map(e, e.k) == ['a', 'b']",
        "self.listMap.exists(e, e.k == 'a' && e.v == '1')",
        "has(self.listMap[0].v) && !has(self.listMap[0].v2)",
        "[1, 2] + [3] == [1, 2, 3]",
        "{'a': 1}['a'] == 1",
        "cel.bind(x, self.array.size(), x == 3)",
        "self.?array.hasValue()",
        "self.m[?'z'].orValue('none') == 'none'",
        "optional.of(1).value() == 1",
        "self.array[0] == 1 ? true : false",
    ];
    for r in valid {
        let mut s = schema.clone();
        s["x-kubernetes-validations"] = json!([{"rule": r}]);
        let errs = validate(&s, &obj, None);
        assert!(errs.is_empty(), "{r}: {errs:?}");
    }
    let errors = [
        ("self.array[100] == 0", "index out of bounds: 100"),
        ("self.m['c'] == 'x'", "no such key: c"),
        (
            "self.listMap[0] == {'k': 'a', 'v': '1'}",
            "no matching overload for '_==_'",
        ),
        ("self.emptyInts.max() == 3", "max called on empty list"),
        ("self.emptyInts.min() == 1", "min called on empty list"),
        ("self.listMap.all(m, m.v2 == 'z')", "no such key: v2"),
        ("self.listMap.map(m, m.v2).size() == 1", "no such key: v2"),
        ("self.listMap.exists_one(m, m.v2 == 'z')", "no such key: v2"),
        (
            "['a', 'b'].sum() == 'c'",
            "found no matching overload for 'sum' applied to 'list(string).()",
        ),
        (
            "[1, 'a', false].filter(x, string(x) == 'a')",
            "compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'",
        ),
        (
            "authorizer.path('/healthz').check('get').allowed()",
            "undeclared reference to 'authorizer'",
        ),
        (
            "self.array.all(x, x.true == 1)",
            "mismatched input 'true' expecting IDENTIFIER",
        ),
    ];
    for (r, want) in errors {
        let mut s = schema.clone();
        s["x-kubernetes-validations"] = json!([{"rule": r}]);
        let errs = validate(&s, &obj, None);
        assert_eq!(errs.len(), 1, "{r}: {errs:?}");
        assert!(
            errs[0].message.contains(want),
            "{r}: want {want:?} in {:?}",
            errs[0].message
        );
    }
}

#[test]
fn has_and_undefined_fields() {
    let schema = json!({"type":"object","properties":{
        "a": {"type":"object","properties":{"b":{"type":"string"}}},
        "a1": {"type":"object","properties":{"d2":{"type":"object","properties":{"e2":{"type":"string"}}}}},
        "s": {"type":"string"},
        "withUnknown": {"type":"object","x-kubernetes-preserve-unknown-fields":true},
        "anyvalField1": {"x-kubernetes-preserve-unknown-fields":true},
        "intorstring": {"x-kubernetes-int-or-string":true},
        "l": {"type":"array","items":{"type":"string"}},
        "dash-name": {"type":"string"},
        "namespace": {"type":"string"}
    }});
    let obj = json!({"a":{"b":"x"},"a1":{},"s":"str","withUnknown":{"unknown":1},"anyvalField1":1,"intorstring":true,"l":{"x":1},"dash-name":"d","namespace":"ns"});
    let cases: &[(&str, Option<&str>)] = &[
        ("has(self.a.b)", None),
        ("!has(self.a1.d2)", None),
        ("self.dash__dash__name == 'd'", None),
        ("self.__namespace__ == 'ns'", None),
        ("self.metadata.name == '' || true", None),
        ("has(self.a.z)", Some("undefined field 'z'")),
        ("has(self.a1.d2.e2)", Some("no such key: d2")),
        (
            "has(self.anyvalField1)",
            Some("undefined field 'anyvalField1'"),
        ),
        (
            "has(self.withUnknown.unknown)",
            Some("undefined field 'unknown'"),
        ),
        (
            "has(self.intorstring)",
            Some("invalid data, expected XIntOrString value to be either a string or integer"),
        ),
        (
            "has(self.l)",
            Some("invalid data, expected an array for the provided schema with type=array"),
        ),
        (
            "has(self.metadata.namespace)",
            Some("undefined field 'namespace'"),
        ),
        (
            "self.s == null",
            Some("no matching overload for '_==_' applied to '(string, null)"),
        ),
        (
            "self.a['b'] == 'x'",
            Some("no matching overload for '_[_]'"),
        ),
        (
            "self.a == {'b': 'x'}",
            Some("found no matching overload for '_==_'"),
        ),
    ];
    for (r, want) in cases {
        let mut s = schema.clone();
        s["x-kubernetes-validations"] = json!([{"rule": r}]);
        let errs = validate(&s, &obj, None);
        match want {
            None => assert!(errs.is_empty(), "{r}: {errs:?}"),
            Some(w) => {
                assert_eq!(errs.len(), 1, "{r}: {errs:?}");
                assert!(
                    errs[0].message.contains(w),
                    "{r}: want {w:?} in {:?}",
                    errs[0].message
                );
            }
        }
    }
}

#[test]
fn schema_levels_and_message_shapes() {
    // rule on an object node: value omitted
    let s = json!({"type":"object","properties":{"spec":{"type":"object","properties":{"m":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.m == 2"}]}}});
    let errs = validate(&s, &json!({"spec":{"m":1}}), None);
    assert_eq!(
        errs,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: failed rule: self.m == 2".into(),
            field: "spec".into()
        }]
    );
    // evaluation error on object node renders the schema type
    let s = json!({"type":"object","properties":{"spec":{"type":"object","properties":{"m":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.m == 2"}]}}});
    let errs = validate(&s, &json!({"spec":{}}), None);
    assert_eq!(
        errs[0].message,
        "Invalid value: \"object\": no such key: m evaluating rule: self.m == 2"
    );
    assert_eq!(errs[0].field, "spec");
    // scalar values are rendered; map keys in path
    let s = json!({"type":"object","properties":{"myProperty":{"type":"object","additionalProperties":{"type":"string",
        "x-kubernetes-validations":[{"rule":"self == 'value2' || self != 'value'","message":"must be value2 or not value"},{"rule":"self.size() == 5","message":"len must be 5"}]}}}});
    let errs = validate(
        &s,
        &json!({"myProperty":{"key":"value","key2":"value2"}}),
        None,
    );
    let rendered: Vec<String> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    assert_eq!(
        rendered,
        vec![
            "myProperty[key]: Invalid value: \"value\": must be value2 or not value".to_string(),
            "myProperty[key2]: Invalid value: \"value2\": len must be 5".to_string(),
        ]
    );
    // root rule
    let s = json!({"type":"object","properties":{"n":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.n > 1"}]});
    let errs = validate(&s, &json!({"n": 1}), None);
    assert_eq!(errs[0].field, "<nil>");
    // items with integers
    let s = json!({"type":"object","properties":{"l":{"type":"array","items":{"type":"integer","x-kubernetes-validations":[{"rule":"self % 2 == 1","message":"gotta be odd"}]}}}});
    let errs = validate(&s, &json!({"l":[1,2]}), None);
    assert_eq!(
        format!("{}: {}", errs[0].field, errs[0].message),
        "l[1]: Invalid value: 2: gotta be odd"
    );
    // null values are not validated
    assert!(validate(&s, &json!({"l": null}), None).is_empty());
}

#[test]
fn message_expression() {
    let base = json!({"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer"}}}}});
    let cases = [
        (
            json!({"rule":"self.replicas > 5","messageExpression":"'replicas ' + string(self.replicas) + ' is too small'"}),
            "Invalid value: replicas 3 is too small",
        ),
        (
            json!({"rule":"self.replicas > 5","message":"static","messageExpression":"''"}),
            "Invalid value: static",
        ),
        (
            json!({"rule":"self.replicas > 5","messageExpression":"'  '"}),
            "Invalid value: failed rule: self.replicas > 5",
        ),
        (
            json!({"rule":"self.replicas > 5","message":"m","messageExpression":"'a\\nb'"}),
            "Invalid value: m",
        ),
        (
            json!({"rule":"self.replicas > 5","message":"m2","messageExpression":"self.nope"}),
            "Invalid value: m2",
        ),
    ];
    for (rule, want) in cases {
        let mut s = base.clone();
        s["properties"]["spec"]["x-kubernetes-validations"] = json!([rule]);
        let errs = validate(&s, &json!({"spec":{"replicas":3}}), None);
        assert_eq!(errs.len(), 1, "{rule}");
        assert_eq!(errs[0].message, want, "{rule}");
    }
}

#[test]
fn reason_and_field_path() {
    let base = json!({"type":"object","properties":{"spec":{"type":"object","properties":{
        "f": {"type":"string"}, "m": {"type":"object","additionalProperties":{"type":"string"}}}}}});
    let obj = json!({"spec":{"f":"x","m":{"k":"v"}}});
    let cases = [
        (
            json!({"rule":"false","reason":"FieldValueForbidden","message":"nope"}),
            "FieldValueForbidden",
            "Forbidden: nope",
            "spec",
        ),
        (
            json!({"rule":"false","reason":"FieldValueRequired","message":"need"}),
            "FieldValueRequired",
            "Required value: need",
            "spec",
        ),
        (
            json!({"rule":"false","reason":"FieldValueDuplicate","message":"dup"}),
            "FieldValueDuplicate",
            "Duplicate value",
            "spec",
        ),
        (
            json!({"rule":"false","reason":"FieldValueInvalid","fieldPath":".f"}),
            "FieldValueInvalid",
            "Invalid value: failed rule: false",
            "spec.f",
        ),
        (
            json!({"rule":"false","fieldPath":".m['k']"}),
            "FieldValueInvalid",
            "Invalid value: failed rule: false",
            "spec.m[k]",
        ),
        (
            json!({"rule":"false","fieldPath":"['f']"}),
            "FieldValueInvalid",
            "Invalid value: failed rule: false",
            "spec.f",
        ),
    ];
    for (rule, reason, msg, field) in cases {
        let mut s = base.clone();
        s["properties"]["spec"]["x-kubernetes-validations"] = json!([rule]);
        let errs = validate(&s, &obj, None);
        assert_eq!(
            errs,
            vec![Cause {
                reason: reason.into(),
                message: msg.into(),
                field: field.into()
            }],
            "{rule}"
        );
    }
}

#[test]
fn transition_rules() {
    let s = json!({"type":"object","properties":{"spec":{"type":"object","properties":{
        "v": {"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"immutable"}]},
        "o": {"type":"string","x-kubernetes-validations":[{"rule":"!oldSelf.hasValue() || self == oldSelf.value()","optionalOldSelf":true,"message":"opt"}]},
        "l": {"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"integer"}},
              "x-kubernetes-validations":[{"rule":"self.v >= oldSelf.v","message":"no decrease"}]}}
    }}}});
    // create: transition rules skipped, optional runs with none
    assert!(validate(
        &s,
        &json!({"spec":{"v":"a","o":"b","l":[{"k":"a","v":1}]}}),
        None
    )
    .is_empty());
    let old = json!({"spec":{"v":"a","o":"b","l":[{"k":"a","v":5},{"k":"b","v":1}]}});
    let new =
        json!({"spec":{"v":"z","o":"c","l":[{"k":"b","v":2},{"k":"a","v":4},{"k":"c","v":0}]}});
    let errs = validate(&s, &new, Some(&old));
    let rendered: Vec<String> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    assert_eq!(
        rendered,
        vec![
            "spec.v: Invalid value: \"z\": immutable".to_string(),
            "spec.o: Invalid value: \"c\": opt".to_string(),
            "spec.l[1]: Invalid value: no decrease".to_string(),
        ]
    );
}

#[test]
fn check_rules_reports_compile_errors() {
    let s = json!({"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}},
        "x-kubernetes-validations":[{"rule":"self.a == 'x'"},{"rule":"self.foo == 1"},{"rule":"self.a"},{"rule":"true","messageExpression":"1"}]}}});
    let causes = check_rules(&s, "spec.versions[0].schema.openAPIV3Schema");
    assert_eq!(causes.len(), 3, "{causes:?}");
    assert_eq!(
        causes[0].field,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule"
    );
    assert_eq!(causes[0].message, "Invalid value: {\"Rule\":\"self.foo == 1\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^");
    assert!(causes[1]
        .message
        .ends_with("cel expression must evaluate to a bool"));
    assert_eq!(causes[2].field, "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[3].messageExpression");
    assert!(causes[2]
        .message
        .ends_with("messageExpression must evaluate to a string"));
}

#[test]
fn cost_limit() {
    let s = json!({"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}},
        "x-kubernetes-validations":[{"rule":"self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))"}]});
    let l: Vec<i64> = (0..200).collect();
    let errs = validate(&s, &json!({"l": l}), None);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].message.contains("call cost exceeds limit"),
        "{:?}",
        errs[0]
    );
}

#[test]
fn never_panics_on_garbage() {
    let rules = [
        "",
        "(",
        "self.",
        "'unterminated",
        "1 +",
        "[1,",
        "{",
        "self[",
        "0x",
        "-9223372036854775808 < 0",
        "18446744073709551616",
        "b'\\xff' == b'\\xff'",
        "'\\u00'",
        "self.a.b.c.d",
        "has(1)",
        "[].all(x)",
    ];
    let schemas = [
        json!(null),
        json!({}),
        json!({"type":"object"}),
        json!({"type":"array","items":5}),
        json!({"type":"string","format":"byte"}),
    ];
    let objs = [
        json!(null),
        json!(1),
        json!("x"),
        json!([1, null]),
        json!({"a": {}}),
    ];
    for r in rules {
        for s in &schemas {
            let mut s = s.clone();
            if let Some(o) = s.as_object_mut() {
                o.insert(
                    "x-kubernetes-validations".into(),
                    json!([{"rule": r, "messageExpression": r, "fieldPath": r}]),
                );
            }
            for o in &objs {
                let _ = validate(&s, o, Some(o));
            }
            let _ = check_rules(&s, "x");
        }
    }
}

/// Runs `valid` and `errors` rules at the root of `schema` against `obj`.
fn run_obj(schema: Value, obj: Value, valid: &[&str], errors: &[(&str, &str)]) {
    for r in valid {
        let mut s = schema.clone();
        s["x-kubernetes-validations"] = json!([{ "rule": r }]);
        let errs = validate(&s, &obj, None);
        assert!(errs.is_empty(), "rule {r} expected valid, got {errs:?}");
    }
    for (r, want) in errors {
        let mut s = schema.clone();
        s["x-kubernetes-validations"] = json!([{ "rule": r }]);
        let errs = validate(&s, &obj, None);
        assert_eq!(errs.len(), 1, "rule {r}: {errs:?}");
        assert!(
            errs[0].message.contains(want),
            "rule {r}: want {want:?} in {:?}",
            errs[0].message
        );
    }
}

fn obj_schema(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

#[test]
fn conversions() {
    let dur = json!({"type":"string","format":"duration"});
    let dt = json!({"type":"string","format":"date-time"});
    let date = json!({"type":"string","format":"date"});
    let byte = json!({"type":"string","format":"byte"});
    run(
        &[
            t("integer"),
            t("number"),
            t("number"),
            t("number"),
            t("boolean"),
            t("string"),
            byte,
            t("string"),
            dur,
            t("string"),
            dt,
            t("string"),
            date,
        ],
        &[
            json!(10),
            json!(10.0),
            json!(10.49),
            json!(10.5),
            json!(true),
            json!("10"),
            json!("MTA="),
            json!("3723.004s"),
            json!("1h2m3s4ms"),
            json!("2011-08-18T19:03:37.01+01:00"),
            json!("2011-08-18T19:03:37.01+01:00"),
            json!("2011-08-18T00:00:00Z"),
            json!("2011-08-18"),
        ],
        &[
            "int(self.val2) == self.val1",
            "int(self.val3) == self.val1",
            "int(self.val4) == self.val1",
            "int(self.val6) == self.val1",
            "double(self.val1) == self.val2",
            "double(self.val6) == self.val2",
            "bytes(self.val6) == self.val7",
            "string(self.val1) == self.val6",
            "string(self.val2) == '10'",
            "string(self.val3) == '10.49'",
            "string(self.val4) == '10.5'",
            "string(self.val5) == 'true'",
            "string(self.val7) == self.val6",
            "duration(self.val8) == self.val9",
            "string(self.val9) == self.val8",
            "timestamp(self.val10) == self.val11",
            "timestamp(self.val12) == self.val13",
            "string(self.val13) == self.val12",
        ],
        &[],
    );
}

#[test]
fn ext_lists_and_sets() {
    let il = json!({"type":"array","items":{"type":"integer"}});
    run(
        &[il.clone(), il],
        &[json!([1, 2, 3]), json!([1, 2, 3])],
        &[
            "self.val1 == self.val2",
            "self.val1 == [1, 2, 3]",
            "1 in self.val1",
            "self.val2[0] in self.val1",
            "self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]",
            "self.val1 + [4, 5] == [1, 2, 3, 4, 5]",
            "lists.range(4) == [0,1,2,3]",
            "lists.range(0) == []",
            "[5,1,2,3].reverse() == [3,2,1,5]",
            "[1,2,3,4].slice(1, 3) == [2, 3]",
            "[1,2,3,4].slice(4, 4) == []",
            "dyn([1,2,3,4]).flatten() == [1,2,3,4]",
            "[[1],[2],[3,4]].flatten() == [1,2,3,4]",
            "[4, 3, 2, 1].sort() == [1, 2, 3, 4]",
            "[\"d\", \"a\", \"b\", \"c\"].sort() == [\"a\", \"b\", \"c\", \"d\"]",
            "[-3, 1, -5, -2, 4].sortBy(e, -(e * e)) == [-5, 4, -3, -2, 1]",
            "lists.range(3).sortBy(e, -e) == [2, 1, 0]",
            "[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]",
            "[[1], [1], [2]].distinct() == [[1], [2]]",
            "sets.contains(['a', 'b'], ['b'])",
            "!sets.contains(['a', 'b'], ['c'])",
            "sets.equivalent(['c', 'b', 'a'], ['b', 'c', 'a'])",
            "sets.intersects(['a', 'b'], ['b', 'c'])",
            "!sets.intersects([], [])",
            "sets.contains([{'a': 1}, {'b': 2}], [{'b': 2}])",
            "sets.contains([duration('1h'), duration('2h')], [duration('2h')])",
            "['a', 'b', 'c'].join('-') == 'a-b-c'",
            "['a', 'b', 'c'].join() == 'abc'",
        ],
        &[
            ("[1,2,3,4].slice(3, 0) != [1,2]", "cannot slice(3, 0), start index must be less than or equal to end index"),
            ("[1,2,3,4].slice(0, 10) != [1,2]", "cannot slice(0, 10), list is length 4"),
            ("[1,2,3,4].slice(-5, 10) != [1,2]", "cannot slice(-5, 10), negative indexes not supported"),
            ("[[1],[2],[3,4]].flatten(-1) == [1,2,3,4]", "level must be non-negative evaluating rule: [[1],[2],[3,4]].flatten(-1) == [1,2,3,4]"),
            ("[\"d\", 3, 2, \"c\"].sort() == [\"a\", \"b\", \"c\", \"d\"]", "expected type 'string' but found 'int'"),
            ("{'k1': 'a', 'k2': 1, 'k2': false}", "expected type 'string' but found 'int'"),
        ],
    );
}

#[test]
fn list_sets_and_list_maps() {
    let set = json!({"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}});
    run(
        &[set.clone(), set],
        &[json!(["a", "b", "c"]), json!(["a", "c", "b"])],
        &[
            "self.val1 == ['c', 'b', 'a']",
            "self.val1 == self.val2",
            "'a' in self.val1",
            "self.val1 + self.val2 == ['a', 'b', 'c']",
            "self.val1 + ['c', 'd'] == ['a', 'b', 'c', 'd']",
            "self.val1.join('-') == 'a-b-c'",
        ],
        &[],
    );
    let lm = json!({"type":"array","items":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],
        "items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"string"}}}}});
    run_obj(
        obj_schema(json!({"objs": lm})),
        json!({"objs": [
            [{"k":"a","v":"1"},{"k":"b","v":"2"}],
            [{"k":"b","v":"2"},{"k":"a","v":"1"}],
            [{"k":"b","v":"3"},{"k":"a","v":"1"}],
            [{"k":"c","v":"4"}]]}),
        &[
            "self.objs[0] == self.objs[1]",
            "self.objs[0] + self.objs[2] == self.objs[2]",
            "self.objs[2] + self.objs[0] == self.objs[0]",
            "self.objs[0] == [self.objs[0][0], self.objs[0][1]]",
            "self.objs[0] == [self.objs[0][1], self.objs[0][0]]",
            "self.objs[2] + [self.objs[0][0], self.objs[0][1]] == self.objs[0]",
            "size(self.objs[0] + [self.objs[3][0]]) == 3",
        ],
        &[(
            "self.objs[0] == {'k': 'a', 'v': '1'}",
            "no matching overload for '_==_'",
        )],
    );
}

#[test]
fn maps_and_map_access() {
    let m = json!({"type":"object","additionalProperties":{"type":"string"}});
    run(
        &[m.clone(), m],
        &[json!({"k1":"a","k2":"b"}), json!({"k2":"b","k1":"a"})],
        &[
            "self.val1 == self.val2",
            "'k1' in self.val1",
            "!('k3' in self.val1)",
            "self.val1 == {'k1': 'a', 'k2': 'b'}",
        ],
        &[],
    );
    run_obj(
        obj_schema(json!({"val": {"type":"object","additionalProperties":{"type":"integer"}}})),
        json!({"val": {"b": 1, "d": 2}}),
        &[
            "!('a' in self.val)",
            "'b' in self.val",
            "!has(self.val.a)",
            "has(self.val.b)",
            "self.val.all(k, self.val[k] > 0)",
            "self.val.exists(k, self.val[k] > 1)",
            "self.val.exists_one(k, self.val[k] == 2)",
            "!self.val.exists(k, self.val[k] > 2)",
            "!self.val.exists_one(k, self.val[k] > 0)",
            "size(self.val) == 2",
            "self.val.map(k, self.val[k]).exists(v, v == 1)",
            "size(self.val.filter(k, self.val[k] > 1)) == 1",
            "self.val.all(k, v, v > 0)",
            "self.val.exists(k, v, v == 2)",
            "self.val.existsOne(k, v, v == 2)",
            "self.val.transformMap(k, v, v > 1, v + 1).size() == 1",
            "self.val.transformMap(k, v, v + 1).size() == 2",
            "self.val.transformMapEntry(k, v, v > 1, {k + '2': v + 1}).size() == 1",
            "self.val.transformMapEntry(k, v, {k + '2': v + 1}).size() == 2",
        ],
        &[("self.val['c'] == 1", "no such key: c")],
    );
}

#[test]
fn object_and_list_access() {
    run_obj(
        obj_schema(json!({
            "a": {"type":"object","properties":{"b":{"type":"integer"},"c":{"type":"integer"},"d":{"type":"integer","nullable":true}}},
            "a1": {"type":"object","properties":{"b1":{"type":"object","properties":{"c1":{"type":"integer"}}},"d2":{"type":"object","properties":{"e2":{"type":"integer"}}}}},
            "objs": {"type":"array","items":{"type":"object","properties":{"f1":{"type":"string"},"f2":{"type":"string"}}}}
        })),
        json!({"a": {"b": 1, "d": null}, "a1": {"b1": {"c1": 4}}, "a3": {}, "objs": [{"f1":"a","f2":"b"},{"f1":"a","f2":"b"}]}),
        &[
            "has(self.a.b)",
            "!has(self.a.c)",
            "!has(self.a.d)",
            "has(self.a1.b1.c1)",
            "!(has(self.a1.d2) && has(self.a1.d2.e2))",
            "!has(self.a1.d2)",
            "self.objs[0] == self.objs[1]",
        ],
        &[
            ("has(self.a.z)", "undefined field 'z'"),
            ("self.a['b'] == 1", "no matching overload for '_[_]'"),
            ("has(self.a1.d2.e2)", "no such key: d2"),
            (
                "self.objs[0] == {'f1': 'a', 'f2': 'b'}",
                "found no matching overload for '_==_'",
            ),
        ],
    );
    run_obj(
        obj_schema(
            json!({"listMap": {"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],
            "items":{"type":"object","properties":{"k":{"type":"string"},"v":{"type":"string"},"v2":{"type":"string"}}}}}),
        ),
        json!({"listMap": [{"k":"a1","v":"b1"},{"k":"a2","v":"b2"},{"k":"a3","v":"b3","v2":"z"}]}),
        &[
            "has(self.listMap[0].v)",
            "self.listMap.all(m, m.k.startsWith('a'))",
            "self.listMap.all(m, !has(m.v2) || m.v2 == 'z')",
            "self.listMap.exists(m, m.k.endsWith('1'))",
            "self.listMap.exists_one(m, m.k == 'a3')",
            "!self.listMap.all(m, m.k.endsWith('1'))",
            "!self.listMap.exists_one(m, m.k.startsWith('a'))",
            "self.listMap.exists(m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.map(m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
            "self.listMap.exists(m, m.v2 == 'z')",
            "!self.listMap.all(m, m.v2 != 'z')",
            "!self.listMap.all(i, m, has(m.v2) && m.v2 != 'z')",
            "self.listMap.exists(i, m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.existsOne(i, m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.transformList(i, m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
            "self.listMap.transformList(i, m, m.v).size() == 3",
        ],
        &[
            ("self.listMap.all(m, m.v2 == 'z')", "no such key: v2"),
            (
                "self.listMap.filter(m, m.v2 == 'z').size() == 1",
                "no such key: v2",
            ),
            (
                "self.listMap.map(m, m.v2 == 'z', m.v2).size() == 1",
                "no such key: v2",
            ),
        ],
    );
    run_obj(
        obj_schema(json!({"array": {"type":"array","items":{"type":"integer"}}})),
        json!({"array": [1, 1, 2, 2, 3, 3, 4, 5]}),
        &[
            "self.array.exists_one(e, e > 4)",
            "!self.array.exists_one(e, e == 2)",
            "size(self.array.filter(e, e%2 == 0)) == 3",
            "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)",
            "self.array.transformList(i, e, e > 2, e * 2).size() > 0",
        ],
        &[("self.array[100] == 0", "index out of bounds: 100")],
    );
}

#[test]
fn nullability_and_invalid_data() {
    run_obj(
        obj_schema(json!({
            "unsetPlainStr": {"type":"string"},
            "unsetNullableStr": {"type":"string","nullable":true},
            "setPlainStr": {"type":"string"},
            "setNullableStr": {"type":"string","nullable":true},
            "setToNullNullableStr": {"type":"string","nullable":true},
            "m": {"type":"object","additionalProperties":{"type":"string","nullable":true}},
            "l": {"type":"array","items":{"type":"string","nullable":true}}
        })),
        json!({"setPlainStr": "v1", "setNullableStr": "v3", "setToNullNullableStr": null, "m": {"a": null, "b": "x"}, "l": [null, "x"]}),
        &[
            "!has(self.unsetPlainStr)",
            "!has(self.unsetNullableStr)",
            "has(self.setPlainStr) && self.setPlainStr == 'v1'",
            "has(self.setNullableStr) && self.setNullableStr == 'v3'",
            "type(self.setNullableStr) != null_type",
            "!has(self.setToNullNullableStr)",
            "self.m.size() == 2",
            "type(self.m['a']) == null_type",
            "type(self.l[0]) == null_type",
        ],
        &[
            (
                "self.unsetPlainStr == null",
                "no matching overload for '_==_' applied to '(string, null)",
            ),
            (
                "self.setNullableStr != null",
                "no matching overload for '_!=_' applied to '(string, null)",
            ),
        ],
    );
    run_obj(
        obj_schema(json!({
            "o": {"type":"object","properties":{"field":{"type":"string"}}},
            "m": {"type":"object","additionalProperties":{"type":"string"}},
            "s": {"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
            "nullable": {"type":"array","items":{"type":"string"}}
        })),
        json!({"o": [], "m": [], "s": {}, "nullable": [null]}),
        &[],
        &[
            (
                "has(self.o)",
                "invalid data, expected a map for the provided schema with type=object",
            ),
            (
                "has(self.m)",
                "invalid data, expected a map for the provided schema with type=object",
            ),
            (
                "has(self.s)",
                "invalid data, expected an array for the provided schema with type=array",
            ),
            (
                "self.nullable[0] == 'x'",
                "invalid data, got null for schema with nullable=false",
            ),
        ],
    );
}

#[test]
fn type_and_object_meta() {
    let obj = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"foo","generateName":"pickItForMe","namespace":"xyz"},"spec":{"field1":"a"}});
    run_obj(
        obj_schema(json!({"spec": {"type":"object","properties":{"field1":{"type":"string"}}}})),
        obj.clone(),
        &[
            "self.kind == 'Pod'",
            "self.apiVersion == 'v1'",
            "self.metadata.name == 'foo'",
            "self.metadata.generateName == 'pickItForMe'",
            "self.spec.field1 == 'a'",
        ],
        &[(
            "has(self.metadata.namespace)",
            "undefined field 'namespace'",
        )],
    );
    run_obj(
        obj_schema(json!({"embedded": {"type":"object","x-kubernetes-embedded-resource":true}})),
        json!({"embedded": obj.clone()}),
        &[
            "self.embedded.kind == 'Pod'",
            "self.embedded.apiVersion == 'v1'",
            "self.embedded.metadata.name == 'foo'",
        ],
        &[
            (
                "has(self.embedded.metadata.namespace)",
                "undefined field 'namespace'",
            ),
            ("has(self.embedded.spec)", "undefined field 'spec'"),
        ],
    );
    let st = json!({"type":"string"});
    run_obj(
        obj_schema(
            json!({"embedded": {"type":"object","x-kubernetes-embedded-resource":true,"properties":{
            "kind": st, "apiVersion": st,
            "metadata": {"type":"object","properties":{"name":st,"generateName":st,"namespace":st}},
            "spec": {"type":"object","properties":{"if": st}}}}}),
        ),
        json!({"embedded": {"apiVersion":"v1","kind":"Pod","metadata":{"name":"foo","generateName":"g","namespace":"ns"},"spec":{"if":"x"}}}),
        &[
            "self.embedded.metadata.namespace == 'ns'",
            "has(self.embedded.metadata.namespace)",
            "self.embedded.spec.__if__ == 'x'",
            "self.embedded.spec.if == 'x'",
        ],
        &[],
    );
}

#[test]
fn int_or_string() {
    let ios = json!({"x-kubernetes-int-or-string": true});
    run_obj(
        obj_schema(json!({"something": ios.clone()})),
        json!({"something": "25%"}),
        &[
            "self.something == '25%'",
            "type(self.something) == string",
            "self.something.endsWith('%')",
            "type(self.something) == string && int(self.something.replace('%', '')) == 25",
        ],
        &[],
    );
    run_obj(
        obj_schema(json!({"something": ios})),
        json!({"something": 1}),
        &[
            "self.something == 1",
            "type(self.something) == int",
            "type(self.something) == int && self.something + 1 == 2",
        ],
        &[],
    );
}

#[test]
fn escaping_property_names() {
    let i = json!({"type":"integer"});
    run_obj(
        obj_schema(
            json!({"true": i, "if": i, "dot.dot": i, "dash-dash": i, "slash/slash": i, "under__score": i, "a@b": i, "namespace": i}),
        ),
        json!({"true": 1, "if": 2, "dot.dot": 3, "dash-dash": 4, "slash/slash": 5, "under__score": 6, "a@b": 7, "namespace": 8}),
        &[
            "self.__true__ == 1",
            "self.__if__ == 2",
            "self.dot__dot__dot == 3",
            "self.dash__dash__dash == 4",
            "self.slash__slash__slash == 5",
            "self.under__underscores__score == 6",
            "self.__namespace__ == 8",
        ],
        &[("self.__illegal__ == 301", "undefined field '__illegal__'")],
    );
}

#[test]
fn optionals() {
    run_obj(
        obj_schema(json!({
            "presentObj": {"type":"object","properties":{"presentStr":{"type":"string"},"absentStr":{"type":"string"}}},
            "absentObj": {"type":"object","properties":{"absentStr":{"type":"string"}}},
            "m": {"type":"object","additionalProperties":{"type":"string"}},
            "l": {"type":"array","items":{"type":"string"}}
        })),
        json!({"presentObj": {"presentStr": "value"}, "m": {"k": "v"}, "l": ["a"]}),
        &[
            "self.?presentObj.?presentStr == optional.of('value')",
            "self.presentObj.?presentStr == optional.of('value')",
            "self.presentObj.?absentStr == optional.none()",
            "self.?absentObj.?absentStr == optional.none()",
            "self.?absentObj.?absentStr.orValue('default value') == 'default value'",
            "self.presentObj.?presentStr.orValue('default value') == 'value'",
            "self.m[?'k'] == optional.of('v')",
            "self.m[?'x'].orValue('d') == 'd'",
            "self.l[?0].hasValue() && !self.l[?5].hasValue()",
            "optional.ofNonZeroValue('').orValue('x') == 'x'",
            "self.?absentObj.or(optional.of(1)).value() == 1",
        ],
        &[(
            "self.absentObj.?absentStr == optional.none()",
            "no such key: absentObj",
        )],
    );
}

#[test]
fn regex_functions() {
    run_obj(
        obj_schema(json!({"str": {"type":"string"}})),
        json!({"str": "this is the 1st string"}),
        &[
            "self.str.find('[0-9]+') == '1'",
            "self.str.find('[xyz]') == ''",
            "self.str.findAll('[a-z]+') == ['this', 'is', 'the', 'st', 'string']",
            "self.str.findAll('[a-z]+', 2) == ['this', 'is']",
            "self.str.matches('^this.*string$')",
        ],
        &[
            (
                "self.str.find(')') == ''",
                "compile error: program instantiation failed: error parsing regexp",
            ),
            (
                "self.str.findAll(')') == []",
                "compile error: program instantiation failed: error parsing regexp",
            ),
            ("self.str.matches('x++')", "invalid matches argument"),
        ],
    );
}

#[test]
fn transition_rule_skipping_and_schema_levels() {
    // transition rules are skipped for missing old values at any level
    let s = json!({"type":"object","properties":{"v":{"type":"integer","x-kubernetes-validations":[{"rule":"self > oldSelf"}]},
        "o":{"type":"object","properties":{"x":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.x > oldSelf.x"}]}}});
    assert!(validate(&s, &json!({"v": 1, "o": {"x": 1}}), Some(&json!({}))).is_empty());
    let errs = validate(
        &s,
        &json!({"v": 1, "o": {"x": 1}}),
        Some(&json!({"v": 1, "o": {"x": 1}})),
    );
    let rendered: Vec<String> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    assert_eq!(
        rendered,
        vec![
            "v: Invalid value: 1: failed rule: self > oldSelf".to_string(),
            "o: Invalid value: failed rule: self.x > oldSelf.x".to_string()
        ]
    );
    // invalid rule under array items / additionalProperties reports compile errors at the node
    let s = json!({"type":"object","properties":{"f":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self == 1"}]}}}});
    let errs = validate(&s, &json!({"f": ["a"]}), None);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "f[0]");
    assert!(errs[0].message.starts_with("Invalid value: \"string\": rule compile error: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(string, int)'"), "{:?}", errs[0]);
    // rules in allOf are evaluated against the node
    let s = json!({"type":"object","properties":{"n":{"type":"integer","allOf":[{"x-kubernetes-validations":[{"rule":"self > 5","message":"too small"}]}]}}});
    let errs = validate(&s, &json!({"n": 1}), None);
    assert_eq!(
        errs,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: 1: too small".into(),
            field: "n".into()
        }]
    );
}

#[test]
fn reason_and_field_path_upstream() {
    let s = json!({"type":"object","properties":{"field1":{"type":"string"},"field2":{"type":"string"},"field3":{"type":"string"}},
        "x-kubernetes-validations":[
            {"rule":"self.field2 != \"value2\"","reason":"FieldValueDuplicate","fieldPath":".field2"},
            {"rule":"self.field3 != \"value3\"","reason":"FieldValueRequired","fieldPath":".field3"},
            {"rule":"self.field1 != \"value1\"","reason":"FieldValueForbidden","fieldPath":".field1"}]});
    let errs = validate(
        &s,
        &json!({"field1":"value1","field2":"value2","field3":"value3"}),
        None,
    );
    assert_eq!(
        errs,
        vec![
            Cause {
                reason: "FieldValueDuplicate".into(),
                message: "Duplicate value".into(),
                field: "field2".into()
            },
            Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: failed rule: self.field3 != \"value3\"".into(),
                field: "field3".into()
            },
            Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: failed rule: self.field1 != \"value1\"".into(),
                field: "field1".into()
            },
        ]
    );
    let s = json!({"type":"object","properties":{"f":{"type":"object","properties":{"m":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.m == 2","reason":"FieldValueForbidden","fieldPath":".m"}]}},
        "x-kubernetes-validations":[{"rule":"1 == 1"}]});
    let errs = validate(&s, &json!({"f":{"m":1}}), None);
    assert_eq!(
        errs,
        vec![Cause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: failed rule: self.m == 2".into(),
            field: "f.m".into()
        }]
    );
}

#[test]
fn optional_old_self_upstream() {
    let obj_s = |rule: &str| json!({"type":"object","properties":{"foo":{"type":"string"}},"x-kubernetes-validations":[{"rule": rule, "optionalOldSelf": true}]});
    let int_s = json!({"type":"integer","x-kubernetes-validations":[{"rule":"self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)","optionalOldSelf":true}]});
    let cases: Vec<(Value, Value, Option<Value>, bool)> = vec![
        (
            obj_s("self.foo == 'not bar' || !oldSelf.hasValue()"),
            json!({"foo":"bar"}),
            None,
            true,
        ),
        (
            obj_s("self.foo == 'valid' || !oldSelf.hasValue()"),
            json!({"foo":"invalid"}),
            Some(json!({"foo":"bar"})),
            false,
        ),
        (
            obj_s("self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')"),
            json!({"foo":"invalid again"}),
            Some(json!({"foo":"invalid"})),
            true,
        ),
        (
            obj_s("self.foo == 'valid' || oldSelf.foo.orValue('') != 'valid'"),
            json!({"foo":"invalid again"}),
            Some(json!({"foo":"invalid"})),
            true,
        ),
        (
            obj_s("self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')"),
            json!({"foo":"invalid"}),
            Some(json!({"foo":"valid"})),
            false,
        ),
        (int_s.clone(), json!(10), None, true),
        (int_s.clone(), json!(9), None, false),
        (int_s.clone(), json!(10), Some(json!(5)), true),
        (int_s.clone(), json!(9), Some(json!(5)), true),
        (int_s.clone(), json!(5), Some(json!(5)), true),
        (int_s, json!(4), Some(json!(5)), false),
    ];
    for (s, o, old, ok) in cases {
        let errs = validate(&s, &o, old.as_ref());
        if ok {
            assert!(errs.is_empty(), "{s} {o}: {errs:?}");
        } else {
            assert_eq!(errs.len(), 1, "{s} {o}");
            assert!(errs[0].message.contains("failed rule"), "{errs:?}");
            assert_eq!(errs[0].reason, "FieldValueInvalid");
        }
    }
}

#[test]
fn max_recursion_depth() {
    let ok = format!("{}self.val1", "self.val1 == ".repeat(249));
    run(&[t("boolean")], &[json!(true)], &[&ok], &[]);
    let bad = format!("{}self.val1", "self.val1 == ".repeat(250));
    run(
        &[t("boolean")],
        &[json!(true)],
        &[],
        &[(&bad, "max recursion depth exceeded")],
    );
    // deep nesting of every kind must not overflow the stack
    for depth in [50, 124, 126, 300, 2000] {
        for (open, close) in [
            ("(", ")"),
            ("[", "]"),
            ("!", ""),
            ("-", ""),
            ("{1:", "}"),
            ("size(", ")"),
            ("[1].map(x, ", ")"),
        ] {
            let rule = format!("{}1{} == 1", open.repeat(depth), close.repeat(depth));
            let s = schemas(&[t("boolean")], &rule);
            let _ = validate(&s, &objs(&[json!(true)]), None);
            let _ = check_rules(&s, "p");
        }
        let chain = format!("self.val1{}", ".val1".repeat(depth));
        let _ = validate(
            &schemas(&[t("boolean")], &chain),
            &objs(&[json!(true)]),
            None,
        );
        let chain = format!("self.val1{}", "[0]".repeat(depth));
        let _ = validate(
            &schemas(&[t("boolean")], &chain),
            &objs(&[json!(true)]),
            None,
        );
    }
}

#[test]
fn check_rules_optional_old_self_and_nesting() {
    let s = json!({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.n > 0","optionalOldSelf":true},{"rule":"!oldSelf.hasValue() || self.n >= oldSelf.value().n","optionalOldSelf":true},{"rule":"self.m > 0"}]}}}});
    let causes = check_rules(&s, "spec.versions[0].schema.openAPIV3Schema");
    let rendered: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message.lines().next().unwrap_or("")))
        .collect();
    assert_eq!(rendered, vec![
        "spec.versions[0].schema.openAPIV3Schema.properties[items].items.x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule".to_string(),
        "spec.versions[0].schema.openAPIV3Schema.properties[items].items.x-kubernetes-validations[2].rule: Invalid value: {\"Rule\":\"self.m \\u003e 0\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'm'".to_string(),
    ]);
    // with optionalOldSelf, oldSelf is an optional_type: its fields are optionals too
    let s2 = json!({"type":"object","properties":{"n":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"oldSelf.n > 0","optionalOldSelf":true}]});
    let c = check_rules(&s2, "p");
    assert_eq!(c.len(), 1);
    assert!(
        c[0].message.contains(
            "found no matching overload for '_>_' applied to '(optional_type(int), int)'"
        ),
        "{c:?}"
    );
}

#[test]
fn ratcheting_unchanged_values() {
    let s = json!({"type":"object","properties":{"foo":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'bar'","message":"gotta be bar"}]}}});
    // unchanged invalid value is ratcheted
    assert!(validate(&s, &json!({"foo":"baz"}), Some(&json!({"foo":"baz"}))).is_empty());
    // changed invalid value is reported
    let errs = validate(&s, &json!({"foo":"baz"}), Some(&json!({"foo":"qux"})));
    assert_eq!(
        format!("{}: {}", errs[0].field, errs[0].message),
        "foo: Invalid value: \"baz\": gotta be bar"
    );
    // create is never ratcheted
    assert_eq!(validate(&s, &json!({"foo":"baz"}), None).len(), 1);
}

/// The predicates of the Kubernetes IP and CIDR libraries (upstream `library/ip_test.go`
/// and `cidr_test.go` cases): Go's `netip` parsing, no zones, no IPv4-mapped IPv6, no
/// leading zeros; canonical IPv6 is RFC 5952.
#[test]
fn ip_and_cidr_predicates() {
    run(
        &[t("string")],
        &[json!("fd00::1")],
        &[
            "isIP('1.2.3.4')",
            "isIP('2001:db8::abcd')",
            "isIP(self.val1)",
            "!isIP('1.2.3.4%eth0')",
            "!isIP('fe80::1%eth0')",
            "!isIP('::ffff:1.2.3.4')",
            "!isIP('010.0.0.1')",
            "!isIP('1.2.3')",
            "!isIP('not.an.ip')",
            "!isIP('')",
            "ip.isCanonical('127.0.0.1')",
            "ip.isCanonical('2001:db8::abcd')",
            "!ip.isCanonical('2001:DB8::ABCD')",
            "!ip.isCanonical('2001:db8::0:0:0:abcd')",
            "ip.isCanonical(self.val1)",
            "isCIDR('192.168.0.0/24')",
            "isCIDR('10.0.0.1/8')",
            "isCIDR('::1/128')",
            "isCIDR('0.0.0.0/0')",
            "!isCIDR('192.168.0.0/33')",
            "!isCIDR('::1/129')",
            "!isCIDR('192.168.0.0/08')",
            "!isCIDR('192.168.0.0')",
            "!isCIDR('192.168.0.0/')",
            "!isCIDR('::ffff:1.2.3.4/96')",
        ],
        &[(
            "ip.isCanonical('not an ip')",
            "IP Address \"not an ip\" parse error during conversion from string",
        )],
    );
    // the argument must be a string
    let errs = check_rules(&schemas(&[t("integer")], "isIP(self.val1)"), "s");
    assert!(
        errs.iter().any(|e| e
            .message
            .contains("found no matching overload for 'isIP' applied to '(int)'")),
        "{errs:?}"
    );
}
