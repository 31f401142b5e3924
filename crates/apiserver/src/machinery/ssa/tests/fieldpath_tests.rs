//! Ports of upstream fieldpath serialize tests.

use crate::machinery::ssa::fieldpath::*;
use serde_json::json;

const GOLDEN: &[&str] = &[
    r####"{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},"k:{\"name\":\"first\"}":{},"k:{\"name\":\"second\"}":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{},"v:2":{},"v:3":{},"v:\"aa\"":{},"v:\"ab\"":{},"v:true":{},"i:1":{},"i:2":{},"i:3":{},"i:4":{}}"####,
    r####"{"f:aaa":{"k:{\"name\":\"second\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},"f:aab":{"f:aaa":{},"f:aaf":{"k:{\"port\":443,\"protocol\":\"udp\"}":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"k:{\"name\":\"first\"}":{}},"f:aac":{"f:aaa":{"v:1":{}},"f:aac":{},"v:3":{"k:{\"name\":\"second\"}":{}}},"f:aad":{"f:aac":{"v:1":{}},"f:aaf":{"k:{\"name\":\"first\"}":{"k:{\"name\":\"first\"}":{}}},"i:1":{"i:1":{},"i:3":{"v:true":{}}}},"f:aae":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:4":{"f:aaf":{}}},"f:aaf":{"i:1":{"f:aac":{}},"i:2":{},"i:3":{}},"k:{\"name\":\"first\"}":{"f:aad":{"f:aaf":{}}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"f:aaa":{"f:aad":{}}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"f:aac":{},"k:{\"name\":\"first\"}":{"i:3":{}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"i:4":{}}},"v:1":{"f:aac":{"i:4":{}},"f:aaf":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{}},"v:2":{"f:aad":{"f:aaf":{}},"i:1":{}},"v:3":{"f:aaa":{},"k:{\"name\":\"first\"}":{},"i:2":{}},"v:\"aa\"":{"f:aab":{"f:aaf":{}},"f:aae":{},"k:{\"name\":\"first\"}":{"f:aad":{}},"i:2":{}},"v:\"ab\"":{"f:aaf":{"i:4":{}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:1":{"f:aae":{"i:4":{}}}},"v:true":{"k:{\"name\":\"second\"}":{"f:aaa":{}},"i:2":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"i:1":{"i:3":{"f:aaf":{}}},"i:2":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"v:1":{}}},"i:3":{"f:aab":{"v:true":{"v:\"aa\"":{}}},"f:aaf":{},"i:1":{}},"i:4":{"v:\"aa\"":{"f:aab":{"k:{\"name\":\"second\"}":{}}}}}"####,
    r####"{"f:spec":{".":{},"f:apps":{".":{},"k:{\"name\":\" app-💻\"}":{".":{},"f:container":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"name\":\"port 🔑\"}":{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}},"k:{\"name\":\" app-🚀\"}":{".":{},"f:container":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"name\":\"port-✅ \"}":{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}}}}}"####,
];
const NON_NORMALIZED: &[(&str, &str)] = &[
    (
        r####"{
  "f:aad": {},
  "f:aaa": {},
  "f:aab": {},
  "f:aac": {},
  "f:aae": {},
  "f:aaf": {},


  "k:{\"name\":\"first\"}": {},
  "k:{\"name\":\"second\"}": {},
  "k:{\"port\":443,\"protocol\":\"tcp\"}": {},
  "k:{ \"protocol\":\"udp\",\"port\":443}": {},
  "v:1": {},

  "v:2": {},
  "v: 3": {},
  "v:\"aa\"": {},

  "v:\"ab\"": {},
  "v:true": {},
  "i:1": {},
  	"i:2": {},
  "i:3": {}  ,
  "i:4":    {}
}"####,
        r####"{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},"k:{\"name\":\"first\"}":{},"k:{\"name\":\"second\"}":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{},"v:2":{},"v:3":{},"v:\"aa\"":{},"v:\"ab\"":{},"v:true":{},"i:1":{},"i:2":{},"i:3":{},"i:4":{}}"####,
    ),
    (
        r####"{
  "f:aaa": {
    "k:{\"name\":\"second\"}": {
      "v:3": {
        "f:aab": {}
      }
    },
    "v:3": {},
    "v:true": {}
  },
  "f:aab": {
    "f:aaa": {},
    "f:aaf": {
      "k:{\"port\":443,\"protocol\":\"udp\"}": {
        "k:{\"port\":443,\"protocol\":\"tcp\"}": {}
      }
    },
    "k:{\"name\":\"first\"}": {}
  },
  "f:aac": {
    "f:aaa": {
      "v:1": {}
    },
    "f:aac": {},
    "v:3": {
      "k:{\"name\":\"second\"}": {}
    }
  },
  "f:aad": {
    "f:aac": {
      "v:1": {}
    },
    "f:aaf": {
      "k:{\"name\":\"first\"}": {
        "k:{\"name\":\"first\"}": {}
      }
    },
    "i:1": {
      "i:1": {},
      "i:3": {
        "v:true": {}
      }
    }
  },
  "f:aae": {
    "f:aae": {},
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {
      "k:{\"port\":443,\"protocol\":\"udp\"}": {}
    },
    "i:4": {
      "f:aaf": {}
    }
  },
  "f:aaf": {
    "i:1": {
      "f:aac": {}
    },
	"i:3": {},
    "i:2": {}
  },
  "k:{\"name\":\"first\"}": {
    "f:aad": {
      "f:aaf": {}
    }
  },
  "k:{\"port\":443,\"protocol\":\"tcp\"}": {
    "f:aaa": {
      "f:aad": {}
    }
  },
  "k:{\"port\":443,\"protocol\":\"udp\"}": {
    "f:aac": {},
    "k:{\"name\":\"first\"}": {
      "i:3": {}
    },
    "k:{\"port\":443,\"protocol\":\"udp\"}": {
      "i:4": {}
    }
  },
   "v:2": {
    "f:aad": {
      "f:aaf": {}
    },
    "i:1": {}
  },
  "v:1": {
    "f:aac": {
      "i:4": {}
    },
    "f:aaf": {},
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {}
  },
  "v:3": {
    "f:aaa": {},
    "k:{\"name\":\"first\"}": {},
    "i:2": {}
  },
  "v:\"aa\"": {
    "f:aab": {
      "f:aaf": {}
    },
    "f:aae": {},
    "k:{\"name\":\"first\"}": {
      "f:aad": {}
    },
    "i:2": {}
  },
  "v:\"ab\"": {
    "f:aaf": {
      "i:4": {}
    },
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {},
    "k:{\"port\":443,\"protocol\":\"udp\"}": {},
    "v:1": {
      "k:{\"port\":443,\"protocol\":\"udp\"}": {}
    },
    "i:1": {
      "f:aae": {
        "i:4": {}
      }
    }
  },
  
  "v:true": {
    "k:{\"name\":\"second\"}": {
      "f:aaa": {}
    },
    "i:2": {
      "k:{\"port\":443,\"protocol\":\"tcp\"}": {}
    }
  },

  
  "i:1": {
    "i:3": {
      "f:aaf": {}
    }
  },

  "i:3": {
    "f:aab": {
      "v:true": {
        "v:\"aa\"": {}
      }
    },
    "f:aaf": {},
    "i:1": {}
  },

  "i:2": {
    "f:aae": {},
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {
      "v:1": {}
    }
  },

  "i:4": {
    "v:\"aa\"": {
      "f:aab": {
        "k:{\"name\":\"second\"}": {}
      }
    }
  }
}"####,
        r####"{"f:aaa":{"k:{\"name\":\"second\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},"f:aab":{"f:aaa":{},"f:aaf":{"k:{\"port\":443,\"protocol\":\"udp\"}":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"k:{\"name\":\"first\"}":{}},"f:aac":{"f:aaa":{"v:1":{}},"f:aac":{},"v:3":{"k:{\"name\":\"second\"}":{}}},"f:aad":{"f:aac":{"v:1":{}},"f:aaf":{"k:{\"name\":\"first\"}":{"k:{\"name\":\"first\"}":{}}},"i:1":{"i:1":{},"i:3":{"v:true":{}}}},"f:aae":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:4":{"f:aaf":{}}},"f:aaf":{"i:1":{"f:aac":{}},"i:2":{},"i:3":{}},"k:{\"name\":\"first\"}":{"f:aad":{"f:aaf":{}}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"f:aaa":{"f:aad":{}}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"f:aac":{},"k:{\"name\":\"first\"}":{"i:3":{}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"i:4":{}}},"v:1":{"f:aac":{"i:4":{}},"f:aaf":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{}},"v:2":{"f:aad":{"f:aaf":{}},"i:1":{}},"v:3":{"f:aaa":{},"k:{\"name\":\"first\"}":{},"i:2":{}},"v:\"aa\"":{"f:aab":{"f:aaf":{}},"f:aae":{},"k:{\"name\":\"first\"}":{"f:aad":{}},"i:2":{}},"v:\"ab\"":{"f:aaf":{"i:4":{}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:1":{"f:aae":{"i:4":{}}}},"v:true":{"k:{\"name\":\"second\"}":{"f:aaa":{}},"i:2":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"i:1":{"i:3":{"f:aaf":{}}},"i:2":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"v:1":{}}},"i:3":{"f:aab":{"v:true":{"v:\"aa\"":{}}},"f:aaf":{},"i:1":{}},"i:4":{"v:\"aa\"":{"f:aab":{"k:{\"name\":\"second\"}":{}}}}}"####,
    ),
];

#[test]
fn serialize_v1_golden_data() {
    for g in GOLDEN {
        let s = Set::from_json_str(g).unwrap();
        assert_eq!(&s.to_json_string(), g);
        // The Value form keeps the same order when serialized.
        assert_eq!(&serde_json::to_string(&s.to_fields_v1()).unwrap(), g);
    }
}

#[test]
fn deserialize_valid_non_normalized() {
    for (input, normalized) in NON_NORMALIZED {
        let s = Set::from_json_str(input).unwrap();
        assert_eq!(&s.to_json_string(), normalized);
    }
}

#[test]
fn serialize_round_trip_random() {
    // Deterministic pseudo-random sets, as upstream's TestSerializeV1.
    let mut seed: u64 = 42;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let elems = [
        PathElement::field("aaa"),
        PathElement::field("aab"),
        PathElement::key(&[("name", json!("first"))]),
        PathElement::key(&[("port", json!(443)), ("protocol", json!("tcp"))]),
        PathElement::Value(json!(1)),
        PathElement::Value(json!("aa")),
        PathElement::Value(json!(true)),
        PathElement::Index(3),
    ];
    for _ in 0..100 {
        let mut s = Set::new();
        for _ in 0..30 {
            let len = 2 + next(4) as usize;
            let p: Path = (0..len)
                .map(|_| elems[next(elems.len() as u64) as usize].clone())
                .collect();
            s.insert(&p);
        }
        let j = s.to_json_string();
        let back = Set::from_json_str(&j).unwrap();
        assert_eq!(back, s, "{j}");
        assert_eq!(Set::from_fields_v1(&s.to_fields_v1()).unwrap(), s);
    }
}

#[test]
fn path_element_round_trip() {
    for s in [
        "i:0",
        "i:1234",
        "f:",
        "f:spec",
        "f: string-with-spaces   ",
        r#"k:{"name":"my-container"}"#,
        r#"k:{"port":"8080","protocol":"TCP"}"#,
        r#"k:{"optionalField":null}"#,
        r#"k:{"jsonField":{"A":1,"B":null,"C":"D","E":{"F":"G"}}}"#,
        r#"k:{"listField":["1","2","3"]}"#,
        "v:null",
        r#"v:"some-string""#,
        "v:1234",
        r#"v:{"some":"json"}"#,
        r#"k:{"name":"app-🚀"}"#,
        r#"k:{"name":"你好世界"}"#,
        "f:spec-🚀",
    ] {
        let pe = PathElement::deserialize(s).unwrap().unwrap();
        assert_eq!(pe.serialize(), s);
    }
}

#[test]
fn path_element_errors_and_unknown() {
    assert_eq!(PathElement::deserialize("r:abc").unwrap(), None);
    for s in [
        "",
        "no-colon",
        "i:index is not a number",
        "i:1.23",
        "i:",
        "v:",
        "k:",
        r#"k:{"name":invalid}"#,
        r#"v:{"a":"b""#,
        r#"v:{"some":"json"} {"other":"json"}"#,
        r#"k:{"name":"my-container"} garbage"#,
        "k:[1]",
    ] {
        assert!(PathElement::deserialize(s).is_err(), "{s}");
    }
    // Whitespace and escapes are accepted and normalized.
    for (s, want) in [
        (r#"v: {"some":"json"}"#, r#"v:{"some":"json"}"#),
        (
            r#"k:{"name":"my-container"} "#,
            r#"k:{"name":"my-container"}"#,
        ),
        (
            r#"k:{"name\u002dcontainer":"my-container"}"#,
            r#"k:{"name-container":"my-container"}"#,
        ),
        (r#"v:"value-\ud83d\ude80""#, r#"v:"value-🚀""#),
        (r#"k:{"b":1,"a":2}"#, r#"k:{"a":2,"b":1}"#),
    ] {
        assert_eq!(
            PathElement::deserialize(s).unwrap().unwrap().serialize(),
            want
        );
    }
}

#[test]
fn go_json_escaping() {
    // Values inside keys are HTML-escaped as Go's encoding/json does.
    let pe = PathElement::key(&[("name", json!("a<b>&c"))]);
    assert_eq!(pe.serialize(), r#"k:{"name":"a\u003cb\u003e\u0026c"}"#);
    let mut s = Set::new();
    s.insert(&[PathElement::field("x"), pe]);
    assert_eq!(
        s.to_json_string(),
        r#"{"f:x":{"k:{\"name\":\"a\\u003cb\\u003e\\u0026c\"}":{}}}"#
    );
    assert_eq!(Set::from_json_str(&s.to_json_string()).unwrap(), s);
    // Floats as Go prints them.
    assert_eq!(PathElement::Value(json!(1.0)).serialize(), "v:1");
    assert_eq!(PathElement::Value(json!(1.5)).serialize(), "v:1.5");
    assert_eq!(PathElement::Value(json!(1e21)).serialize(), "v:1e+21");
    assert_eq!(PathElement::Value(json!(1e-7)).serialize(), "v:1e-7");
}

#[test]
fn path_string() {
    let p = |e: Vec<PathElement>| path_to_string(&e);
    assert_eq!(
        p(vec![PathElement::field("foo"), PathElement::Index(1)]),
        ".foo[1]"
    );
    assert_eq!(
        p(vec![
            PathElement::field("foo"),
            PathElement::key(&[
                ("a", json!("b")),
                ("c", json!(1)),
                ("d", json!(1.5)),
                ("e", json!(true))
            ])
        ]),
        r#".foo[a="b",c=1,d=1.5,e=true]"#
    );
    assert_eq!(
        p(vec![
            PathElement::field("foo"),
            PathElement::Value(json!("b")),
            PathElement::Value(json!(5)),
            PathElement::Value(json!(false)),
            PathElement::Value(json!(2.5)),
        ]),
        r#".foo[="b"][=5][=false][=2.5]"#
    );
    assert_eq!(
        p(vec![
            PathElement::field("spec"),
            PathElement::field("apps"),
            PathElement::key(&[("name", json!("app-🚀"))]),
            PathElement::field("container"),
            PathElement::field("image"),
        ]),
        r#".spec.apps[name="app-🚀"].container.image"#
    );
}

#[test]
fn element_ordering() {
    // Field < Key < Value < Index; values: numbers < strings < bools < lists < maps < null.
    let els = [
        PathElement::field("a"),
        PathElement::field("b"),
        PathElement::key(&[("name", json!("a"))]),
        PathElement::key(&[("name", json!("b"))]),
        PathElement::key(&[("name", json!("b")), ("port", json!(1))]),
        PathElement::Value(json!(1)),
        PathElement::Value(json!(2.5)),
        PathElement::Value(json!("a")),
        PathElement::Value(json!(false)),
        PathElement::Value(json!(true)),
        PathElement::Value(json!([1])),
        PathElement::Value(json!({"a": 1})),
        PathElement::Value(json!(null)),
        PathElement::Index(0),
        PathElement::Index(10),
    ];
    for i in 0..els.len() {
        for j in 0..els.len() {
            assert_eq!(els[i].cmp(&els[j]), i.cmp(&j), "{} vs {}", els[i], els[j]);
        }
    }
    assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
}

#[test]
fn set_operations() {
    let p = |names: &[&str]| field_path(names);
    let a = Set::from_paths(&[p(&["a"]), p(&["b", "c"]), p(&["b", "d"]), p(&["e"])]);
    let b = Set::from_paths(&[p(&["a"]), p(&["b", "c"]), p(&["f"])]);
    assert_eq!(
        a.union(&b),
        Set::from_paths(&[
            p(&["a"]),
            p(&["b", "c"]),
            p(&["b", "d"]),
            p(&["e"]),
            p(&["f"])
        ])
    );
    assert_eq!(
        a.intersection(&b),
        Set::from_paths(&[p(&["a"]), p(&["b", "c"])])
    );
    assert_eq!(
        a.difference(&b),
        Set::from_paths(&[p(&["b", "d"]), p(&["e"])])
    );
    // Recursive difference: a member removes its whole subtree.
    let r = Set::from_paths(&[p(&["b"])]);
    assert_eq!(
        a.recursive_difference(&r),
        Set::from_paths(&[p(&["a"]), p(&["e"])])
    );
    assert_eq!(a.difference(&r), a);
    assert!(a.has(&p(&["b", "c"])) && !a.has(&p(&["b"])));
    assert_eq!(
        a.paths()
            .iter()
            .map(|x| path_to_string(x))
            .collect::<Vec<_>>(),
        vec![".a", ".e", ".b.c", ".b.d"]
    );
    assert!(Set::new().is_empty());
}

#[test]
fn fields_v1_member_and_children() {
    let mut s = Set::new();
    s.insert(&field_path(&["spec"]));
    s.insert(&field_path(&["spec", "replicas"]));
    s.insert(&field_path(&["metadata", "labels", "app"]));
    assert_eq!(
        s.to_json_string(),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{".":{},"f:replicas":{}}}"#
    );
    // An empty object and null both mean a leaf member.
    let d =
        Set::from_fields_v1(&json!({"f:a": {}, "f:b": null, "f:c": {".": {}, "f:d": {}}})).unwrap();
    assert_eq!(
        d.to_json_string(),
        r#"{"f:a":{},"f:b":{},"f:c":{".":{},"f:d":{}}}"#
    );
    assert!(Set::from_fields_v1(&json!({"f:a": 1})).is_err());
    assert!(Set::from_fields_v1(&json!({"i:x": {}})).is_err());
    // Unknown element types are skipped.
    assert_eq!(
        Set::from_fields_v1(&json!({"x:a": {}, "f:b": {}}))
            .unwrap()
            .to_json_string(),
        r#"{"f:b":{}}"#
    );
}
