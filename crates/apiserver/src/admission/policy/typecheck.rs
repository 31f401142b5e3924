//! Type checking of a ValidatingAdmissionPolicy's expressions against the schemas of
//! the kinds it matches (upstream `.../policy/validating/typechecking.go`), for the
//! policy's `status.typeChecking.expressionWarnings`.

use serde_json::{json, Map, Value};

use crate::machinery::cel::admission::{type_check, Want};
use crate::machinery::schema::REF_PREFIX;
use crate::registry::catalog::{Catalog, ResourceDef};

/// Most kinds checked per policy (upstream `maxTypesToCheck`).
const MAX_TYPES: usize = 10;
/// How deep `$ref`s are inlined (recursive schemas stop there, as `dyn`).
const MAX_DEPTH: usize = 24;

fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The kinds the policy's resource rules name explicitly (no wildcards), sorted as
/// upstream's `typesToCheck`.
fn kinds(policy: &Value, catalog: &Catalog) -> Vec<&'static ResourceDef> {
    let mut out: Vec<&'static ResourceDef> = Vec::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rule in rules {
        let explicit = |k: &str| {
            let mut v = strings(&rule, k);
            if v.iter().any(|x| x == "*") {
                v.clear();
            }
            v.sort();
            v
        };
        let resources: Vec<String> = explicit("resources")
            .into_iter()
            .filter(|r| !r.contains('/'))
            .collect();
        for g in explicit("apiGroups") {
            for v in explicit("apiVersions") {
                for r in &resources {
                    if let Some(def) = catalog.lookup(&g, &v, r) {
                        if !out.iter().any(|d| std::ptr::eq(*d, def)) {
                            out.push(def);
                        }
                        if out.len() >= MAX_TYPES {
                            return out;
                        }
                    }
                }
            }
        }
    }
    out
}

/// The kind's schema with `$ref`s inlined.
fn schema_of(def: &ResourceDef) -> Value {
    match def.custom {
        Some(c) => crate::registry::custom::published_schema(c).clone(),
        None => {
            let defs = crate::registry::catalog::definitions();
            match defs.get(&def.definition()) {
                Some(s) => inline(s, 0),
                None => json!({}),
            }
        }
    }
}

fn inline(s: &Value, depth: usize) -> Value {
    let Value::Object(m) = s else {
        return s.clone();
    };
    if depth > MAX_DEPTH {
        return json!({"x-kubernetes-preserve-unknown-fields": true});
    }
    let target = m.get("$ref").and_then(Value::as_str).or_else(|| {
        m.get("allOf")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 1)
            .and_then(|a| a[0].get("$ref"))
            .and_then(Value::as_str)
    });
    if let Some(r) = target {
        let name = r.strip_prefix(REF_PREFIX).unwrap_or(r);
        return match crate::registry::catalog::definitions().get(name) {
            Some(d) => inline(d, depth + 1),
            None => json!({}),
        };
    }
    let mut out = Map::new();
    for (k, v) in m {
        match k.as_str() {
            "properties" => {
                let props = v
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(pk, pv)| (pk.clone(), inline(pv, depth + 1)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(k.clone(), inline(v, depth + 1));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if m.get("format").and_then(Value::as_str) == Some("int-or-string") {
        out.insert("x-kubernetes-int-or-string".into(), json!(true));
    }
    Value::Object(out)
}

/// The `expressionWarnings` of a policy: one per expression that does not check
/// against one of the matched kinds (`apps/v1, Kind=Deployment: compilation failed: ...`).
pub fn expression_warnings(policy: &Value, catalog: &Catalog) -> Vec<Value> {
    let defs = kinds(policy, catalog);
    if defs.is_empty() {
        return Vec::new();
    }
    let schemas: Vec<(String, Value)> = defs
        .iter()
        .map(|d| {
            let gv = if d.group.is_empty() {
                d.version.to_string()
            } else {
                format!("{}/{}", d.group, d.version)
            };
            (format!("{gv}, Kind={}", d.kind), schema_of(d))
        })
        .collect();
    let param_kind = policy.pointer("/spec/paramKind").filter(|k| k.is_object());
    let params_schema = param_kind.and_then(|k| {
        let av = k.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = k.get("kind").and_then(Value::as_str).unwrap_or("");
        let (g, v) = av.split_once('/').unwrap_or(("", av));
        catalog
            .resources()
            .iter()
            .find(|r| r.group == g && r.version == v && r.kind == kind)
            .map(|d| schema_of(d))
    });
    let mut out = Vec::new();
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, v) in validations.iter().enumerate() {
        for (field, want) in [
            ("expression", Want::Bool),
            ("messageExpression", Want::String),
        ] {
            let Some(src) = v
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            let messages: Vec<String> = schemas
                .iter()
                .filter_map(|(gvk, schema)| {
                    type_check(
                        src,
                        schema,
                        params_schema.as_ref(),
                        param_kind.is_some(),
                        want,
                    )
                    .map(|issue| format!("{gvk}: {issue}\n"))
                })
                .collect();
            if !messages.is_empty() {
                out.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": messages.join("\n"),
                }));
            }
        }
    }
    out
}

/// The status upstream's type-checking controller writes for `policy` at its current
/// generation, or `None` when the status already reflects it.
pub fn desired_status(policy: &Value, catalog: &Catalog) -> Option<Value> {
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)?;
    let observed = policy
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if generation <= observed {
        return None;
    }
    let mut status = policy
        .get("status")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    status["observedGeneration"] = json!(generation);
    let warnings = expression_warnings(policy, catalog);
    status["typeChecking"] = if warnings.is_empty() {
        json!({})
    } else {
        json!({"expressionWarnings": warnings})
    };
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(validations: Value) -> Value {
        json!({"metadata": {"name": "p", "generation": 1}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": validations}})
    }

    #[test]
    fn warnings_name_the_kind_and_the_field() {
        let c = Catalog::builtin();
        let fine = [
            "object.spec.replicas > 1 && object.metadata.name != ''",
            "object.spec.template.spec.containers.all(c, c.image.startsWith('nginx'))",
            "has(object.metadata.annotations) && object.metadata.annotations['x'] == 'y'",
            "object.spec.strategy.type == 'RollingUpdate' && request.operation == 'CREATE'",
            "object.spec.template.spec.containers.all(c, !has(c.resources.limits) || !('memory' in c.resources.limits) || quantity(c.resources.limits['memory']).isLessThan(quantity('1Gi')))",
            "oldObject == null || object.spec.selector == oldObject.spec.selector",
            "object.spec.template.spec.containers.exists(c, c.ports.exists(p, p.containerPort == 80))",
        ];
        for e in fine {
            let w = expression_warnings(&policy(json!([{ "expression": e }])), c);
            assert!(w.is_empty(), "{e}: {w:?}");
        }
        let w = expression_warnings(
            &policy(json!([{"expression": "object.spec.replicas > 1"},
                           {"expression": "object.spec.replicaz > 1", "messageExpression": "object.spec.replicas"}])),
            c,
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(w[0]["fieldRef"], "spec.validations[1].expression");
        let text = w[0]["warning"].as_str().unwrap();
        assert!(
            text.starts_with("apps/v1, Kind=Deployment: compilation failed: ERROR: <input>:1:12: undefined field 'replicaz'"),
            "{text}"
        );
        assert_eq!(w[1]["fieldRef"], "spec.validations[1].messageExpression");
        // wildcards are not checked
        let mut wild = policy(json!([{"expression": "object.nope"}]));
        wild["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = json!(["*"]);
        assert!(expression_warnings(&wild, c).is_empty());
    }

    #[test]
    fn status_follows_the_generation() {
        let c = Catalog::builtin();
        let p = policy(json!([{"expression": "true"}]));
        assert_eq!(
            desired_status(&p, c),
            Some(json!({"observedGeneration": 1, "typeChecking": {}}))
        );
        let mut seen = p.clone();
        seen["status"] = json!({"observedGeneration": 1, "typeChecking": {}});
        assert_eq!(desired_status(&seen, c), None);
    }
}
