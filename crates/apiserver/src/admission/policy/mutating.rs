//! The MutatingAdmissionPolicy plugin (upstream `.../policy/mutating`: `plugin.go`,
//! `dispatcher.go`, `patch/json_patch.go`, `patch/smd.go`): `mutations` of
//! `patchType: ApplyConfiguration` (an object built in CEL, merged into the request's
//! object as server-side apply merges an apply configuration, by the kind's schema)
//! and `JSONPatch` (a list of `JSONPatch{op, path, value, from}`), in order, with
//! reinvocation for `reinvocationPolicy: IfNeeded`.

use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::{Common, Ctx, Expr, Server, VARS};
use crate::admission::{Attributes, BoxFuture, Outcome, Plugin};
use crate::machinery::cel::admission::Want;
use crate::registry::catalog::ResourceDef;
use apimachinery::status::{ApiError, ApiResult, Cause};

/// One `mutations[]` entry.
#[derive(Clone, Debug)]
enum Mutation {
    Apply(Expr),
    JsonPatch(Expr),
}

/// A compiled MutatingAdmissionPolicy.
#[derive(Clone, Debug)]
struct Policy {
    common: Common,
    mutations: Vec<Mutation>,
    if_needed: bool,
}

impl super::Compiled for Policy {
    fn name(&self) -> &str {
        &self.common.name
    }

    fn from_json(p: &Value) -> Policy {
        let spec = p.get("spec").cloned().unwrap_or(Value::Null);
        let expr = |m: &Value, k: &str| {
            m.pointer(&format!("/{k}/expression"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Policy {
            common: Common::from_json(p),
            mutations: spec
                .get("mutations")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|m| match m.get("patchType").and_then(Value::as_str) {
                            Some("JSONPatch") => Mutation::JsonPatch(Expr::new(
                                &expr(m, "jsonPatch"),
                                Want::Any,
                                VARS,
                            )),
                            _ => Mutation::Apply(Expr::new(
                                &expr(m, "applyConfiguration"),
                                Want::Any,
                                VARS,
                            )),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            if_needed: spec.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded"),
        }
    }
}

/// The compiled policies with their bindings.
type State = super::View<Policy>;

/// The MutatingAdmissionPolicy admission plugin.
pub struct MutatingPolicies {
    server: Arc<Server>,
    state: RwLock<Arc<State>>,
}

impl MutatingPolicies {
    /// The plugin over the server's stored policies and bindings. Register it in the
    /// admission chain where it belongs in upstream's order.
    pub fn new(server: Arc<Server>) -> Arc<MutatingPolicies> {
        Arc::new(MutatingPolicies {
            server,
            state: RwLock::new(Arc::new(super::View::default())),
        })
    }

    /// The compiled view of the current tables (compiled again when either changed).
    fn state(&self) -> Arc<State> {
        super::view(
            &self.server,
            &self.state,
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
        )
    }
}
impl Plugin for MutatingPolicies {
    fn name(&self) -> &'static str {
        "MutatingAdmissionPolicy"
    }

    fn handles(&self, attrs: &Attributes) -> bool {
        if super::matching::exempt(attrs) || !super::matching::has_object(attrs.operation) {
            return false;
        }
        self.state()
            .hooks
            .iter()
            .any(|(p, _)| p.common.matcher.matches_rules(attrs))
    }

    fn wants_reinvocation(&self, attrs: &Attributes) -> bool {
        self.state()
            .hooks
            .iter()
            .any(|(p, _)| p.if_needed && p.common.matcher.matches_rules(attrs))
    }

    fn admit<'a>(
        &'a self,
        attrs: &'a Attributes,
        obj: &'a mut Value,
        out: &'a mut Outcome,
    ) -> BoxFuture<'a, ApiResult<()>> {
        let _ = out;
        Box::pin(async move {
            let state = self.state();
            let api = &self.server;
            mutate(api, &state, attrs, obj)
        })
    }
}

/// A policy error (upstream `generic.PolicyError`).
struct PolicyError {
    policy: String,
    binding: String,
    message: String,
}

fn mutate(api: &Server, state: &State, attrs: &Attributes, obj: &mut Value) -> ApiResult<()> {
    let mut errors: Vec<PolicyError> = Vec::new();
    for (policy, bindings) in &state.hooks {
        if attrs.reinvocation && !policy.if_needed {
            continue;
        }
        let c = &policy.common;
        let current = obj.clone();
        let ctx = Ctx::new(api, attrs, Some(&current))?;
        if !ctx.matches(&c.matcher) {
            continue;
        }
        for b in bindings {
            if let Some(m) = &b.matcher {
                let ctx = Ctx::new(api, attrs, Some(obj))?;
                if !ctx.matches(m) {
                    continue;
                }
            }
            let params = match ctx.params(c.param_kind.as_ref(), b.param_ref.as_ref()) {
                Ok(p) => p,
                Err(e) => {
                    if c.fail {
                        errors.push(PolicyError {
                            policy: c.name.clone(),
                            binding: b.name.clone(),
                            message: format!("failed to configure binding: {e}"),
                        });
                    }
                    continue;
                }
            };
            for param in &params {
                if let Err(e) = mutate_one(api, attrs, policy, obj, param.as_ref()) {
                    if c.fail {
                        errors.push(PolicyError {
                            policy: c.name.clone(),
                            binding: b.name.clone(),
                            message: e,
                        });
                    }
                }
            }
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let mut e: ApiError = super::forbidden(attrs, Some(obj), "admission request denied by policy");
    e.message = String::new();
    for pe in errors {
        let message = format!(
            "policy '{}' with binding '{}' denied request: {}",
            pe.policy, pe.binding, pe.message
        );
        if e.message.is_empty() {
            e.message = message.clone();
            e.reason = "Invalid";
        }
        e.causes.push(Cause {
            reason: "".into(),
            message,
            field: String::new(),
        });
    }
    Err(e)
}

/// Evaluate one policy for one binding and param on `obj`: match conditions, then
/// each mutation in order on the object the previous one produced.
fn mutate_one(
    api: &Server,
    attrs: &Attributes,
    policy: &Policy,
    obj: &mut Value,
    param: Option<&Value>,
) -> Result<(), String> {
    let c = &policy.common;
    {
        let snapshot = obj.clone();
        let ctx = Ctx::new(api, attrs, Some(&snapshot)).map_err(|e| e.message.clone())?;
        let request = ctx.request();
        let ns_obj = ctx.namespace_object();
        let mut act = ctx.activation(&request, &ns_obj, param);
        for (name, e) in &c.variables {
            act.add_variable_with(name, |a| e.eval(a));
        }
        for (_, cond) in &c.match_conditions {
            match cond.eval(&mut act) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(()),
                Ok(_) => return Err("no such overload".into()),
                Err(e) => return Err(e),
            }
        }
    }
    for m in &policy.mutations {
        // every mutation sees the object as the previous one left it
        let snapshot = obj.clone();
        let ctx = Ctx::new(api, attrs, Some(&snapshot)).map_err(|e| e.message.clone())?;
        let request = ctx.request();
        let ns_obj = ctx.namespace_object();
        let mut act = ctx.activation(&request, &ns_obj, param);
        for (name, e) in &c.variables {
            act.add_variable_with(name, |a| e.eval(a));
        }
        match m {
            Mutation::Apply(e) => {
                let config = e.eval_apply_configuration(&mut act)?;
                *obj = apply_configuration(attrs.resource, obj, config)?;
            }
            Mutation::JsonPatch(e) => {
                let ops = e.eval(&mut act)?;
                *obj = json_patch(obj, ops)?;
            }
        }
    }
    Ok(())
}

/// Merge an apply configuration into `obj` by the kind's schema (upstream
/// `ApplyStructuredMergeDiff`: structured-merge-diff's merge of the configuration).
pub(crate) fn apply_configuration(
    def: &ResourceDef,
    obj: &Value,
    config: Value,
) -> Result<Value, String> {
    let Value::Object(mut config) = config else {
        return Err("ApplyConfiguration expression must evaluate to an Object".into());
    };
    for k in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(k) {
            config.insert(k.into(), v.clone());
        }
    }
    // the kind's schema as server-side apply reads it
    let root = match def.custom {
        Some(custom) => crate::registry::custom::published_schema(custom).clone(),
        None => serde_json::json!({
            "$ref": format!("{}{}", crate::machinery::schema::REF_PREFIX, def.definition())
        }),
    };
    let resolve =
        |name: &str| -> Option<&Value> { crate::registry::catalog::definitions().get(name) };
    let cache = crate::machinery::ssa::schema::AtomCache::default();
    let mut schema = crate::machinery::ssa::Schema::new(&root, &resolve).with_cache(&cache);
    if def.custom.is_none() {
        schema = schema.fixed();
    }
    let config = Value::Object(config);
    let mut atomics = Vec::new();
    find_atomics(
        &schema,
        schema.root(),
        &config,
        &mut String::new(),
        &mut atomics,
        0,
    );
    if !atomics.is_empty() {
        return Err(format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    crate::machinery::ssa::merge::merge(&schema, obj, &config)
        .map_err(|e| format!("error applying patch: failed to merge patch: {e}"))
}

/// The paths of atomic lists, maps and structs an apply configuration sets (upstream
/// `findAtomics`: such values would replace what the object holds entirely).
fn find_atomics<'a>(
    schema: &crate::machinery::ssa::Schema<'a>,
    tr: crate::machinery::ssa::schema::TypeRef<'a>,
    v: &Value,
    path: &mut String,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let atom = schema.resolve(tr);
    match v {
        Value::Object(m) => {
            if let Some(map) = atom.map {
                if map.atomic {
                    out.push(path.clone());
                }
                for (k, x) in m {
                    if map.field(k).is_none() {
                        continue;
                    }
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    find_atomics(schema, map.child_type(k), x, path, out, depth + 1);
                    path.truncate(len);
                }
            }
        }
        Value::Array(items) => {
            if let Some(list) = atom.list {
                if list.atomic {
                    out.push(path.clone());
                }
                for (i, x) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    find_atomics(schema, list.elem, x, path, out, depth + 1);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// Apply a list of `JSONPatch` objects (upstream `patch/json_patch.go`).
pub(crate) fn json_patch(obj: &Value, ops: Value) -> Result<Value, String> {
    let Value::Array(ops) = ops else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    };
    let mut list = Vec::new();
    for op in ops {
        let Value::Object(mut m) = op else {
            return Err(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch"
                    .into(),
            );
        };
        // empty optional fields are absent
        m.retain(|k, v| !(k == "from" && v.as_str() == Some("")));
        list.push(Value::Object(m));
    }
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(list)).map_err(|e| format!("JSON Patch: {e}"))?;
    let mut out = obj.clone();
    json_patch::patch(&mut out, &patch).map_err(|e| format!("JSON Patch: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::Catalog;
    use serde_json::json;

    #[test]
    fn apply_configuration_merges_by_schema() {
        let def = Catalog::builtin()
            .lookup("apps", "v1", "deployments")
            .unwrap();
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"a": "1"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "app", "image": "x"}, {"name": "side", "image": "y"}]}}}});
        let config = json!({"metadata": {"labels": {"b": "2"}},
            "spec": {"template": {"spec": {"containers": [{"name": "side", "image": "z"}]}}}});
        let out = apply_configuration(def, &live, config).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(out["spec"]["replicas"], 1);
        // containers is a list map keyed by name: merged, not replaced
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "image": "x"}, {"name": "side", "image": "z"}])
        );
    }

    #[test]
    fn apply_configurations_may_not_set_atomics() {
        let def = Catalog::builtin()
            .lookup("apps", "v1", "deployments")
            .unwrap();
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}}});
        let err = apply_configuration(
            def,
            &live,
            json!({"spec": {"selector": {"matchLabels": {"c": "d"}}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector"
        );
    }

    async fn put(store: &crate::storage::store::Store, plural: &str, key: &str, obj: Value) {
        store
            .write(
                &super::super::storage_key(plural),
                key,
                &[],
                false,
                |_, _| Ok(crate::storage::store::WriteAction::Put(obj)),
            )
            .await
            .expect("write");
    }

    /// A later mutating plugin that adds the label `b`.
    struct AddsB;

    impl Plugin for AddsB {
        fn name(&self) -> &'static str {
            "AddsB"
        }
        fn handles(&self, _attrs: &Attributes) -> bool {
            true
        }
        fn admit<'a>(
            &'a self,
            _attrs: &'a Attributes,
            obj: &'a mut Value,
            _out: &'a mut Outcome,
        ) -> BoxFuture<'a, ApiResult<()>> {
            obj["metadata"]["labels"]["b"] = json!("1");
            Box::pin(async { Ok(()) })
        }
    }

    // upstream's reinvocation: a policy with reinvocationPolicy IfNeeded runs again when
    // a later plugin changed the object; one with Never does not
    #[tokio::test]
    async fn reinvocation_if_needed() {
        for (policy, want_a) in [("IfNeeded", true), ("Never", false)] {
            let store = crate::storage::store::Store::new(
                0,
                std::collections::HashMap::new(),
                crate::storage::persist::Committer::start(None),
                100,
            );
            store.attach_committer();
            let server = Arc::new(Server {
                store: Arc::clone(&store),
                catalog: Box::new(|| None),
                authorizer: None,
            });
            let plugin = MutatingPolicies::new(Arc::clone(&server));
            let first = plugin.state();
            assert!(Arc::ptr_eq(&first, &plugin.state()), "compiled once");
            put(&store, "mutatingadmissionpolicies", "copy-b", json!({
                "metadata": {"name": "copy-b", "generation": 1},
                "spec": {"failurePolicy": "Fail", "reinvocationPolicy": policy,
                    "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
                        "apiVersions": ["v1"], "resources": ["deployments"], "scope": "*"}],
                        "namespaceSelector": {}, "objectSelector": {}, "matchPolicy": "Equivalent"},
                    "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                        "'b' in object.metadata.labels ? [JSONPatch{op: 'add', path: '/metadata/labels/a', value: 'from-b'}] : []"}}]}}))
            .await;
            put(
                &store,
                "mutatingadmissionpolicybindings",
                "copy-b",
                json!({
                "metadata": {"name": "copy-b"}, "spec": {"policyName": "copy-b"}}),
            )
            .await;
            assert!(
                !Arc::ptr_eq(&first, &plugin.state()),
                "recompiled after a change"
            );
            let chain = crate::admission::Chain::new();
            chain.register(plugin);
            chain.register(Arc::new(AddsB));
            let def = Catalog::builtin()
                .lookup("apps", "v1", "deployments")
                .unwrap();
            let mut attrs = Attributes::new(
                crate::admission::Operation::Create,
                def,
                None,
                None,
                "d".into(),
            );
            attrs.user = None;
            let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "labels": {"app": "d"}}, "spec": {}});
            chain.admit(&attrs, &mut obj).await.expect("admit");
            assert_eq!(obj["metadata"]["labels"]["b"], "1");
            assert_eq!(
                obj["metadata"]["labels"].get("a").is_some(),
                want_a,
                "{policy}: {obj}"
            );
        }
    }

    #[test]
    fn json_patches() {
        let obj = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}});
        let out = json_patch(
            &obj,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 3},
                   {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]),
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
        assert_eq!(out["metadata"]["labels"], json!({"x": "y"}));
        let err = json_patch(&obj, json!({"op": "add"})).unwrap_err();
        assert_eq!(
            err,
            "type mismatch: JSONPatchType.expression should evaluate to array"
        );
        let err = json_patch(
            &obj,
            json!([{"op": "test", "path": "/spec/replicas", "value": 2}]),
        )
        .unwrap_err();
        assert!(err.starts_with("JSON Patch: "), "{err}");
    }
}
