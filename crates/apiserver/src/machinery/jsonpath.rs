//! The JSONPath subset CRD printer columns and scale paths use (`.spec.replicas`,
//! `.status.conditions[?(@.type=="Ready")].status`, `.items[0]`, `.a['b.c']`,
//! `.metadata.labels.app\.kubernetes\.io/name`, `[*]`), evaluated as upstream's
//! `k8s.io/client-go/util/jsonpath` finds results.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter {
        path: Vec<String>,
        op: Op,
        value: Value,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Exists,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

fn parse_literal(s: &str) -> Value {
    let t = s.trim();
    if let Some(inner) = t
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| t.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
    {
        return Value::String(inner.to_string());
    }
    serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()))
}

impl JsonPath {
    /// Parse `.a.b[0]` (an optional `{...}` wrapper is accepted); `Err` with the reason.
    pub fn parse(path: &str) -> Result<JsonPath, String> {
        let p = path.trim();
        let p = p
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .unwrap_or(p);
        let p = p.strip_prefix('$').unwrap_or(p);
        let chars: Vec<char> = p.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    let mut name = String::new();
                    while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                        if chars[i] == '\\' && i + 1 < chars.len() {
                            i += 1;
                        }
                        name.push(chars[i]);
                        i += 1;
                    }
                    if name == "*" {
                        steps.push(Step::All);
                    } else if !name.is_empty() {
                        steps.push(Step::Field(name));
                    }
                }
                '[' => {
                    let start = i + 1;
                    let mut depth = 1;
                    let mut quote: Option<char> = None;
                    i += 1;
                    while i < chars.len() {
                        let c = chars[i];
                        match quote {
                            Some(q) if c == q => quote = None,
                            Some(_) => {}
                            None if c == '"' || c == '\'' => quote = Some(c),
                            None if c == '[' => depth += 1,
                            None if c == ']' => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            None => {}
                        }
                        i += 1;
                    }
                    if i >= chars.len() {
                        return Err(format!("unterminated array in {path}"));
                    }
                    let inner: String = chars[start..i].iter().collect();
                    i += 1;
                    steps.push(Self::bracket(inner.trim(), path)?);
                }
                c => return Err(format!("unrecognized character {c:?} in {path}")),
            }
        }
        Ok(JsonPath { steps })
    }

    fn bracket(inner: &str, path: &str) -> Result<Step, String> {
        if inner == "*" {
            return Ok(Step::All);
        }
        if let Some(f) = inner.strip_prefix("?(").and_then(|r| r.strip_suffix(')')) {
            let f = f.trim();
            let (lhs, op, rhs) = if let Some((l, r)) = f.split_once("==") {
                (l, Op::Eq, r)
            } else if let Some((l, r)) = f.split_once("!=") {
                (l, Op::Ne, r)
            } else {
                (f, Op::Exists, "")
            };
            let lhs = lhs.trim();
            let rel = lhs
                .strip_prefix('@')
                .ok_or_else(|| format!("unsupported filter {f:?} in {path}"))?;
            let fields: Vec<String> = rel
                .split('.')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            return Ok(Step::Filter {
                path: fields,
                op,
                value: parse_literal(rhs),
            });
        }
        if let Some(name) = inner
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| inner.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
        {
            return Ok(Step::Field(name.to_string()));
        }
        inner
            .parse::<i64>()
            .map(Step::Index)
            .map_err(|_| format!("unsupported array index {inner:?} in {path}"))
    }

    /// Every value the path finds in `root`, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                match step {
                    Step::Field(name) => {
                        if let Some(x) = v.get(name) {
                            next.push(x);
                        }
                    }
                    Step::Index(i) => {
                        if let Some(a) = v.as_array() {
                            let idx = if *i < 0 { a.len() as i64 + i } else { *i };
                            if let Some(x) = usize::try_from(idx).ok().and_then(|u| a.get(u)) {
                                next.push(x);
                            }
                        }
                    }
                    Step::All => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Filter { path, op, value } => {
                        let items: Vec<&Value> = match v {
                            Value::Array(a) => a.iter().collect(),
                            _ => Vec::new(),
                        };
                        for item in items {
                            let mut x = Some(item);
                            for f in path {
                                x = x.and_then(|y| y.get(f));
                            }
                            let keep = match op {
                                Op::Exists => x.is_some(),
                                Op::Eq => x.is_some_and(|y| loose_eq(y, value)),
                                Op::Ne => x.is_some_and(|y| !loose_eq(y, value)),
                            };
                            if keep {
                                next.push(item);
                            }
                        }
                    }
                }
            }
            current = next;
        }
        current
    }

    /// The first value found.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A JSON value printed as upstream's jsonpath text output does: strings raw, other
/// values as JSON.
pub fn to_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_fields_indexes_and_filters() {
        let obj = json!({
            "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "items": [{"n": 1}, {"n": 2}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}
        });
        let get = |p: &str| JsonPath::parse(p).expect(p).first(&obj).cloned();
        assert_eq!(get(".spec.replicas"), Some(json!(3)));
        assert_eq!(get("{.spec.items[1].n}"), Some(json!(2)));
        assert_eq!(get(".spec.items[-1].n"), Some(json!(2)));
        assert_eq!(
            get(".status.conditions[?(@.type==\"Ready\")].status"),
            Some(json!("True"))
        );
        assert_eq!(
            get(".status.conditions[?(@.type=='Synced')].status"),
            Some(json!("False"))
        );
        assert_eq!(
            get(".metadata.labels.app\\.kubernetes\\.io/name"),
            Some(json!("web"))
        );
        assert_eq!(
            get(".metadata.labels['app.kubernetes.io/name']"),
            Some(json!("web"))
        );
        assert_eq!(get(".spec.missing"), None);
        let all = JsonPath::parse(".spec.items[*].n").expect("parse");
        assert_eq!(all.find(&obj), vec![&json!(1), &json!(2)]);
        assert!(JsonPath::parse(".spec.items[").is_err());
        assert!(JsonPath::parse("spec").is_err());
    }
}
