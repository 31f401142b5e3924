//! OpenAPI v3: the `/openapi/v3` index and one document per group-version, generated
//! from the catalogue (paths and operations) and the schemas (components).
//!
//! What clients rely on: every operation carries `x-kubernetes-group-version-kind`;
//! every PATCH operation lists the `fieldValidation` query parameter inline and the
//! patch media types (kubectl decides from this that the server validates fields);
//! component schemas of kinds carry an `x-kubernetes-group-version-kind` array and
//! properties carry the patch strategy and list-type extensions (kubectl computes
//! strategic merge patches from them). Documents are addressed by a content hash so
//! client caches stay correct.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};

use crate::machinery::schema::REF_PREFIX;
use crate::registry::catalog::definitions;
use crate::registry::catalog::{Catalog, ResourceDef, Subresource};

/// One served document with its hash.
#[derive(Clone)]
pub struct Document {
    /// Serialised JSON.
    pub bytes: bytes::Bytes,
    /// Upper-case hex SHA-512 of `bytes`.
    pub hash: String,
}

/// All documents keyed by path (`api/v1`, `apis/apps/v1`), and the index.
#[derive(Clone)]
pub struct OpenApi {
    /// Per group-version documents.
    pub documents: BTreeMap<String, Document>,
    /// The `/openapi/v3` index.
    pub index: bytes::Bytes,
}

fn hash(bytes: &[u8]) -> String {
    Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// The documents, built once.
pub fn openapi() -> &'static OpenApi {
    static DOCS: OnceLock<OpenApi> = OnceLock::new();
    DOCS.get_or_init(build)
}

fn build() -> OpenApi {
    let c = Catalog::builtin();
    let mut documents = BTreeMap::new();
    for g in c.groups() {
        for v in c.versions(g) {
            documents.insert(doc_key(g, v), make_document(c, g, v));
        }
    }
    with_index(documents)
}

fn doc_key(g: &str, v: &str) -> String {
    if g.is_empty() {
        format!("api/{v}")
    } else {
        format!("apis/{g}/{v}")
    }
}

fn make_document(c: &Catalog, g: &str, v: &str) -> Document {
    let doc = document(c, g, v);
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let h = hash(&bytes);
    Document {
        bytes: bytes.into(),
        hash: h,
    }
}

fn with_index(documents: BTreeMap<String, Document>) -> OpenApi {
    let mut paths = Map::new();
    for (k, d) in &documents {
        paths.insert(
            k.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{k}?hash={}", d.hash)}),
        );
    }
    let index = serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default();
    OpenApi {
        documents,
        index: index.into(),
    }
}

/// The documents of a catalogue with custom resources: the built-in documents, plus one
/// per group-version that serves a custom resource (rebuilt from the catalogue).
pub fn with_custom(c: &Catalog) -> OpenApi {
    let mut documents = openapi().documents.clone();
    for g in c.groups() {
        for v in c.versions(g) {
            if c.group_version(g, v).iter().any(|r| r.custom.is_some()) {
                documents.insert(doc_key(g, v), make_document(c, g, v));
            }
        }
    }
    with_index(documents)
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("{REF_PREFIX}{name}")})
}

fn json_response(schema: Value) -> Value {
    json!({"content": {"application/json": {"schema": schema}, "application/yaml": {"schema": schema}}, "description": "OK"})
}

fn query_param(name: &str, ty: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        query_param("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"),
        query_param("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."),
        query_param("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn (default) - Strict"),
    ]
}

fn list_params() -> Vec<Value> {
    vec![
        query_param("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."),
        query_param("continue", "string", "The continue option should be set when retrieving more results from the server."),
        query_param("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
        query_param("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
        query_param("limit", "integer", "limit is a maximum number of responses to return for a list call."),
        query_param("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."),
        query_param("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
        query_param("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."),
        query_param("timeoutSeconds", "integer", "Timeout for the list/watch call."),
        query_param("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."),
    ]
}

fn op_id(verb: &str, r: &ResourceDef, namespaced: bool, sub: &str) -> String {
    let group: String = if r.group.is_empty() {
        "Core".into()
    } else {
        // upstream's friendly group name drops `.k8s.io` (`networking.k8s.io` →
        // `Networking`, `rbac.authorization.k8s.io` → `RbacAuthorization`)
        r.group
            .trim_end_matches(".k8s.io")
            .split('.')
            .map(|s| {
                let mut c = s.chars();
                c.next()
                    .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                    .unwrap_or_default()
            })
            .collect()
    };
    let version = {
        let mut c = r.version.chars();
        c.next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default()
    };
    format!(
        "{verb}{group}{version}{}{}{sub}",
        if namespaced { "Namespaced" } else { "" },
        r.kind
    )
}

// Each argument is an independent part of the OpenAPI operation object.
#[allow(clippy::too_many_arguments)]
fn operation(
    verb: &str,
    action: &str,
    r: &ResourceDef,
    kind_gvk: Value,
    params: Vec<Value>,
    body: Option<Value>,
    response: Value,
    ns: bool,
    sub: &str,
) -> Value {
    let mut op = Map::new();
    op.insert(
        "tags".into(),
        json!([format!(
            "{}{}",
            if r.group.is_empty() {
                "core"
            } else {
                r.package()
            },
            r.version
        )]),
    );
    op.insert("description".into(), json!(format!("{action} {}", r.kind)));
    op.insert("operationId".into(), json!(op_id(verb, r, ns, sub)));
    if !params.is_empty() {
        op.insert("parameters".into(), Value::Array(params));
    }
    if let Some(b) = body {
        op.insert("requestBody".into(), b);
    }
    op.insert(
        "responses".into(),
        json!({"200": response, "401": {"description": "Unauthorized"}}),
    );
    op.insert("x-kubernetes-action".into(), json!(action));
    op.insert("x-kubernetes-group-version-kind".into(), kind_gvk);
    Value::Object(op)
}

/// POST of `pods/binding` (`createNamespacedPodBinding`) or `pods/eviction`
/// (`createNamespacedPodEviction`, a `policy/v1` Eviction).
fn create_only_post(r: &ResourceDef, schema: &str, kind_gvk: Value, ns: bool, sub: &str) -> Value {
    operation(
        "create",
        "post",
        r,
        kind_gvk,
        write_params(),
        Some(json!({"content": {"*/*": {"schema": schema_ref(schema)}}, "required": true})),
        json_response(schema_ref(schema)),
        ns,
        sub,
    )
}

/// GET of `pods/log` (`readCoreV1NamespacedPodLog`): text, with the `PodLogOptions`
/// query parameters.
fn log_get(r: &ResourceDef, ns: bool) -> Map<String, Value> {
    let text = json!({"type": "string"});
    let mut get = operation(
        "read",
        "get",
        r,
        gvk(r.group, r.version, r.kind),
        Vec::new(),
        None,
        json!({"content": {
            "application/json": {"schema": text},
            "application/vnd.kubernetes.protobuf": {"schema": text},
            "application/yaml": {"schema": text},
            "text/plain": {"schema": text},
        }, "description": "OK"}),
        ns,
        "Log",
    );
    get["description"] = json!(format!("read log of the specified {}", r.kind));
    let mut params = path_params(ns, true);
    if let Some(p) = params.as_array_mut() {
        p.extend([
            query_param("container", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."),
            query_param("follow", "boolean", "Follow the log stream of the pod. Defaults to false."),
            query_param("insecureSkipTLSVerifyBackend", "boolean", "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the serving certificate of the backend it is connecting to."),
            query_param("limitBytes", "integer", "If set, the number of bytes to read from the server before terminating the log output."),
            query_param("previous", "boolean", "Return previous terminated container logs. Defaults to false."),
            query_param("sinceSeconds", "integer", "A relative time in seconds before the current time from which to show logs. Only one of sinceSeconds or sinceTime may be specified."),
            query_param("sinceTime", "string", "An RFC3339 timestamp from which to show logs. Only one of sinceSeconds or sinceTime may be specified."),
            query_param("tailLines", "integer", "If set, the number of lines from the end of the logs to show."),
            query_param("timestamps", "boolean", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults to false."),
        ]);
    }
    let mut ops = Map::new();
    ops.insert("get".into(), get);
    ops.insert("parameters".into(), params);
    ops
}

/// GET and POST of a streaming subresource (`connectCoreV1GetNamespacedPodExec`, ...):
/// connect operations answering any media type.
fn connect_ops(r: &ResourceDef, ns: bool, sub: Subresource, kind: &str) -> Map<String, Value> {
    let name = match sub {
        Subresource::Exec => "Exec",
        Subresource::Attach => "Attach",
        _ => "Portforward",
    };
    let mut ops = Map::new();
    for (method, verb) in [("get", "Get"), ("post", "Post")] {
        let mut op = operation(
            "connect",
            "connect",
            r,
            gvk(r.group, r.version, kind),
            Vec::new(),
            None,
            json!({"content": {"*/*": {"schema": {"type": "string"}}}, "description": "OK"}),
            ns,
            name,
        );
        op["operationId"] = json!(op_id(&format!("connect{verb}"), r, ns, name));
        op["description"] = json!(format!(
            "connect {} requests to {} of {}",
            method.to_uppercase(),
            sub.name(),
            r.kind
        ));
        ops.insert(method.into(), op);
    }
    let mut params = path_params(ns, true);
    let streams: &[(&str, &str, &str)] = match sub {
        Subresource::Exec => &[
            ("command", "string", "Command is the remote command to execute. argv array. Not executed within a shell."),
            ("container", "string", "Container in which to execute the command. Defaults to only container if there is only one container in the pod."),
            ("stderr", "boolean", "Redirect the standard error stream of the pod for this call."),
            ("stdin", "boolean", "Redirect the standard input stream of the pod for this call. Defaults to false."),
            ("stdout", "boolean", "Redirect the standard output stream of the pod for this call."),
            ("tty", "boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false."),
        ],
        Subresource::Attach => &[
            ("container", "string", "The container in which to execute the command. Defaults to only container if there is only one container in the pod."),
            ("stderr", "boolean", "Stderr if true indicates that stderr is to be redirected for the attach call. Defaults to true."),
            ("stdin", "boolean", "Stdin if true, redirects the standard input stream of the pod for this call. Defaults to false."),
            ("stdout", "boolean", "Stdout if true indicates that stdout is to be redirected for the attach call. Defaults to true."),
            ("tty", "boolean", "TTY if true indicates that a tty will be allocated for the attach call. Defaults to false."),
        ],
        _ => &[("ports", "integer", "List of ports to forward Required when using WebSockets")],
    };
    if let Some(p) = params.as_array_mut() {
        p.extend(streams.iter().map(|(n, t, d)| query_param(n, t, d)));
    }
    ops.insert("parameters".into(), params);
    ops
}

/// The PATCH media types of a resource: custom resources take no strategic merge patch
/// (kubectl picks the patch type from this list).
fn patch_content(r: &ResourceDef, schema: &Value) -> Value {
    let mut m = Map::new();
    for t in [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        if r.custom.is_some() && t == "application/strategic-merge-patch+json" {
            continue;
        }
        m.insert(t.into(), json!({"schema": schema}));
    }
    Value::Object(m)
}

fn object_ops(
    r: &ResourceDef,
    schema: &str,
    k_gvk: Value,
    ns: bool,
    sub: &str,
    with_delete: bool,
) -> Map<String, Value> {
    let mut m = Map::new();
    let obj = schema_ref(schema);
    m.insert(
        "get".into(),
        operation(
            "read",
            "get",
            r,
            k_gvk.clone(),
            vec![],
            None,
            json_response(obj.clone()),
            ns,
            sub,
        ),
    );
    m.insert(
        "put".into(),
        operation(
            "replace",
            "put",
            r,
            k_gvk.clone(),
            write_params(),
            Some(json!({"content": {"*/*": {"schema": obj}}, "required": true})),
            json_response(obj.clone()),
            ns,
            sub,
        ),
    );
    let mut patch_params = write_params();
    patch_params.push(query_param(
        "force",
        "boolean",
        "Force is going to \"force\" Apply requests.",
    ));
    let patch_schema = schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch");
    m.insert(
        "patch".into(),
        operation(
            "patch",
            "patch",
            r,
            k_gvk.clone(),
            patch_params,
            Some(json!({"content": patch_content(r, &patch_schema), "required": true})),
            json_response(obj),
            ns,
            sub,
        ),
    );
    if with_delete {
        m.insert(
            "delete".into(),
            operation(
                "delete",
                "delete",
                r,
                k_gvk,
                vec![
                    query_param("dryRun", "string", "When present, indicates that modifications should not be persisted."),
                    query_param("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted."),
                    query_param("propagationPolicy", "string", "Whether and how garbage collection will be performed."),
                ],
                Some(json!({"content": {"*/*": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")}}})),
                json_response(schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Status")),
                ns,
                sub,
            ),
        );
    }
    m
}

fn path_params(ns: bool, name: bool) -> Value {
    let mut p = Vec::new();
    if name {
        p.push(json!({"name": "name", "in": "path", "required": true, "description": "name of the object", "schema": {"type": "string", "uniqueItems": true}}));
    }
    if ns {
        p.push(json!({"name": "namespace", "in": "path", "required": true, "description": "object name and auth scope, such as for teams and projects", "schema": {"type": "string", "uniqueItems": true}}));
    }
    Value::Array(p)
}

fn document(c: &Catalog, group: &str, version: &str) -> Value {
    let mut custom_schemas: Map<String, Value> = Map::new();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let mut paths = Map::new();
    let mut roots: BTreeSet<String> = BTreeSet::new();
    let mut kinds: Vec<(String, Value)> = Vec::new();
    let mut lists: Vec<(String, String, Value)> = Vec::new();
    for name in [
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    ] {
        roots.insert(name.to_string());
    }
    for r in c.group_version(group, version) {
        let def = r.definition();
        let k_gvk = gvk(r.group, r.version, r.kind);
        if let Some(custom) = r.custom {
            custom_schemas.insert(
                def.clone(),
                crate::registry::custom::published_schema(custom).clone(),
            );
        }
        roots.insert(def.clone());
        kinds.push((def.clone(), k_gvk.clone()));
        let ns = r.namespaced;
        if r.strategy.create_only() {
            // a review: POST on the collection, nothing else
            let base = if ns {
                format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
            } else {
                format!("{prefix}/{}", r.plural)
            };
            let mut ops = Map::new();
            ops.insert("post".into(), create_only_post(r, &def, k_gvk, ns, ""));
            ops.insert("parameters".into(), path_params(ns, false));
            paths.insert(base, Value::Object(ops));
            continue;
        }
        let list_name = format!("{def}List");
        lists.push((
            list_name.clone(),
            def.clone(),
            gvk(r.group, r.version, &r.list_kind()),
        ));
        let base = if ns {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        // collection
        let mut coll = Map::new();
        coll.insert(
            "get".into(),
            operation(
                "list",
                "list",
                r,
                k_gvk.clone(),
                list_params(),
                None,
                json_response(schema_ref(&list_name)),
                ns,
                "",
            ),
        );
        coll.insert(
            "post".into(),
            operation(
                "create",
                "post",
                r,
                k_gvk.clone(),
                write_params(),
                Some(json!({"content": {"*/*": {"schema": schema_ref(&def)}}, "required": true})),
                json_response(schema_ref(&def)),
                ns,
                "",
            ),
        );
        if r.delete_collection {
            coll.insert(
                "delete".into(),
                operation(
                    "deletecollection",
                    "deletecollection",
                    r,
                    k_gvk.clone(),
                    list_params(),
                    None,
                    json_response(schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Status")),
                    ns,
                    "",
                ),
            );
        }
        coll.insert("parameters".into(), path_params(ns, false));
        paths.insert(base.clone(), Value::Object(coll));
        let mut item = object_ops(r, &def, k_gvk.clone(), ns, "", true);
        item.insert("parameters".into(), path_params(ns, true));
        paths.insert(format!("{base}/{{name}}"), Value::Object(item));
        for s in r.subresources {
            let streaming = match s {
                Subresource::Log => Some(log_get(r, ns)),
                Subresource::Exec => Some(connect_ops(r, ns, *s, "PodExecOptions")),
                Subresource::Attach => Some(connect_ops(r, ns, *s, "PodAttachOptions")),
                Subresource::PortForward => Some(connect_ops(r, ns, *s, "PodPortForwardOptions")),
                _ => None,
            };
            if let Some(ops) = streaming {
                paths.insert(format!("{base}/{{name}}/{}", s.name()), Value::Object(ops));
                continue;
            }
            let (schema, sub_gvk) = match s {
                Subresource::Scale => {
                    roots.insert("io.k8s.api.autoscaling.v1.Scale".into());
                    (
                        "io.k8s.api.autoscaling.v1.Scale".to_string(),
                        gvk("autoscaling", "v1", "Scale"),
                    )
                }
                Subresource::Binding => {
                    roots.insert("io.k8s.api.core.v1.Binding".into());
                    (
                        "io.k8s.api.core.v1.Binding".to_string(),
                        gvk("", "v1", "Binding"),
                    )
                }
                Subresource::Token => {
                    roots.insert("io.k8s.api.authentication.v1.TokenRequest".into());
                    (
                        "io.k8s.api.authentication.v1.TokenRequest".to_string(),
                        gvk("authentication.k8s.io", "v1", "TokenRequest"),
                    )
                }
                Subresource::Eviction => {
                    roots.insert("io.k8s.api.policy.v1.Eviction".into());
                    (
                        "io.k8s.api.policy.v1.Eviction".to_string(),
                        gvk("policy", "v1", "Eviction"),
                    )
                }
                _ => (def.clone(), k_gvk.clone()),
            };
            let sub_name = {
                let n = s.name();
                let mut ch = n.chars();
                ch.next()
                    .map(|f| f.to_uppercase().collect::<String>() + ch.as_str())
                    .unwrap_or_default()
            };
            let mut ops = object_ops(r, &schema, sub_gvk.clone(), ns, &sub_name, false);
            if *s == Subresource::Finalize {
                ops.retain(|k, _| k == "put");
            }
            if matches!(
                s,
                Subresource::Binding | Subresource::Eviction | Subresource::Token
            ) {
                // upstream serves only POST on bindings and evictions
                let post = create_only_post(r, &schema, sub_gvk, ns, &sub_name);
                ops.clear();
                ops.insert("post".into(), post);
            }
            ops.insert("parameters".into(), path_params(ns, true));
            paths.insert(format!("{base}/{{name}}/{}", s.name()), Value::Object(ops));
        }
        if ns {
            let mut all = Map::new();
            all.insert(
                "get".into(),
                operation(
                    "list",
                    "list",
                    r,
                    k_gvk.clone(),
                    list_params(),
                    None,
                    json_response(schema_ref(&list_name)),
                    false,
                    "ForAllNamespaces",
                ),
            );
            paths.insert(format!("{prefix}/{}", r.plural), Value::Object(all));
        }
    }
    // components: everything reachable from the roots
    let defs = definitions().all();
    let mut components = Map::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if components.contains_key(&name) {
            continue;
        }
        let Some(schema) = custom_schemas.get(&name).or_else(|| defs.get(&name)) else {
            continue;
        };
        collect_refs(schema, &mut todo);
        components.insert(name, schema.clone());
    }
    for (def, k_gvk) in kinds {
        if let Some(s) = components.get_mut(&def).and_then(Value::as_object_mut) {
            s.insert("x-kubernetes-group-version-kind".into(), json!([k_gvk]));
        }
    }
    if let Some(s) = components
        .get_mut("io.k8s.api.autoscaling.v1.Scale")
        .and_then(Value::as_object_mut)
    {
        s.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([gvk("autoscaling", "v1", "Scale")]),
        );
    }
    for (list_name, item_def, l_gvk) in lists {
        components.insert(
            list_name,
            json!({
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                    "items": {"type": "array", "items": {"allOf": [schema_ref(&item_def)], "default": {}}},
                    "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                    "metadata": {"allOf": [schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")], "default": {}},
                },
                "x-kubernetes-group-version-kind": [l_gvk],
            }),
        );
    }
    components.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(),
        json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}),
    );
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.0"},
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}}},
        "security": [{"BearerToken": []}],
    })
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(REF_PREFIX))
            {
                out.push(r.to_string());
            }
            for (_, c) in m {
                collect_refs(c, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_patch_operation_offers_field_validation() {
        let api = openapi();
        let apps = api.documents.get("apis/apps/v1").expect("apps/v1 document");
        let doc: Value = serde_json::from_slice(&apps.bytes).expect("json");
        let mut patches = 0;
        for (_, item) in doc["paths"].as_object().expect("paths") {
            if let Some(p) = item.get("patch") {
                patches += 1;
                let params = p["parameters"].as_array().expect("params");
                assert!(params.iter().any(|x| x["name"] == "fieldValidation"));
                assert!(p["x-kubernetes-group-version-kind"].is_object());
                assert!(p["requestBody"]["content"]
                    .get("application/strategic-merge-patch+json")
                    .is_some());
            }
        }
        assert!(patches >= 10);
        let dep = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            dep["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        let containers =
            &doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        // every $ref resolves inside the document
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        for r in refs {
            assert!(
                doc["components"]["schemas"].get(&r).is_some(),
                "dangling ref {r}"
            );
        }
    }

    #[test]
    fn index_lists_every_group_version() {
        let idx: Value = serde_json::from_slice(&openapi().index).expect("json");
        assert!(idx["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .is_some_and(|u| u.starts_with("/openapi/v3/api/v1?hash=")));
        assert!(idx["paths"].get("apis/autoscaling/v2").is_some());
    }
}
