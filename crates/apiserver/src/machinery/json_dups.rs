//! JSON parsing that notices duplicate object keys.
//!
//! serde_json keeps the last of two equal keys silently; upstream's strict decoding
//! reports them (`duplicate field "metadata.name"`). This parser builds the same
//! [`Value`] as `serde_json::from_slice` and also returns the paths of duplicated keys.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parse `bytes`; return the value and the paths of duplicate keys (document order).
pub fn parse(bytes: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let mut dups = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Node {
        path: String::new(),
        dups: &mut dups,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((v, dups))
}

struct Node<'a> {
    path: String,
    dups: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let Node { path, dups } = self;
        loop {
            let p = format!("{path}[{}]", out.len());
            match seq.next_element_seed(Node {
                path: p,
                dups: &mut *dups,
            })? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let Node { path, dups } = self;
        while let Some(k) = map.next_key::<String>()? {
            let p = child(&path, &k);
            let v = map.next_value_seed(Node {
                path: p.clone(),
                dups: &mut *dups,
            })?;
            if out.insert(k, v).is_some() {
                dups.push(p);
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_with_paths() {
        let (v, d) = parse(br#"{"a":1,"b":{"c":[{"x":1,"x":2}]},"a":3}"#).expect("parse");
        assert_eq!(v["a"], 3);
        assert_eq!(v["b"]["c"][0]["x"], 2);
        assert_eq!(d, vec!["b.c[0].x".to_string(), "a".to_string()]);
    }

    #[test]
    fn same_value_as_serde_json() {
        let text = br#"{"n":-1,"f":1.5,"big":18446744073709551615,"s":"\u00e9","l":[null,true]}"#;
        let (v, d) = parse(text).expect("parse");
        assert!(d.is_empty());
        assert_eq!(v, serde_json::from_slice::<Value>(text).expect("serde"));
        assert!(parse(b"{\"a\":").is_err());
        assert!(parse(b"{} x").is_err());
    }
}
