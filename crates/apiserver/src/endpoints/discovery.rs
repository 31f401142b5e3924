//! Discovery documents built from the catalogue: `/api`, `/apis`, `/apis/<group>`,
//! `/api/v1` and `/apis/<group>/<version>` in the legacy form, and aggregated
//! discovery v2 (`APIGroupDiscoveryList`) when the client asks for it.

use serde_json::{json, Map, Value};

use crate::registry::catalog::{Catalog, ResourceDef, Subresource};

/// Content type of aggregated discovery v2.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery v2.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let params: Vec<String> = part.split(';').map(|p| p.trim().replace(' ', "")).collect();
        params.first().is_some_and(|m| m == "application/json")
            && params.iter().any(|p| p == "g=apidiscovery.k8s.io")
            && params.iter().any(|p| p == "v=v2")
            && params.iter().any(|p| p == "as=APIGroupDiscoveryList")
    })
}

/// `/api` (legacy).
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(c: &Catalog, group: &str) -> Value {
    let versions: Vec<Value> = c
        .versions(group)
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

/// `/apis` (legacy `APIGroupList`).
pub fn group_list(c: &Catalog) -> Value {
    let groups: Vec<Value> = c
        .groups()
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(|g| group_entry(c, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`; `None` for an unknown group.
pub fn group(c: &Catalog, group: &str) -> Option<Value> {
    if group.is_empty() || c.versions(group).is_empty() {
        return None;
    }
    let mut g = group_entry(c, group);
    if let Some(o) = g.as_object_mut() {
        o.insert("kind".into(), json!("APIGroup"));
        o.insert("apiVersion".into(), json!("v1"));
    }
    Some(g)
}

fn sub_kind(sub: Subresource) -> (&'static str, &'static str, &'static str) {
    match sub {
        Subresource::Scale => ("autoscaling", "v1", "Scale"),
        Subresource::Binding => ("", "", "Binding"),
        Subresource::Exec => ("", "", "PodExecOptions"),
        Subresource::Attach => ("", "", "PodAttachOptions"),
        Subresource::PortForward => ("", "", "PodPortForwardOptions"),
        Subresource::Eviction => ("policy", "v1", "Eviction"),
        Subresource::Token => ("authentication.k8s.io", "v1", "TokenRequest"),
        _ => ("", "", ""),
    }
}

/// `/api/v1` or `/apis/<g>/<v>` (`APIResourceList`).
pub fn resource_list(c: &Catalog, group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for r in c.group_version(group, version) {
        let mut m = Map::new();
        m.insert("name".into(), json!(r.plural));
        m.insert("singularName".into(), json!(r.singular));
        m.insert("namespaced".into(), json!(r.namespaced));
        m.insert("kind".into(), json!(r.kind));
        m.insert("verbs".into(), json!(r.verbs()));
        if !r.short_names.is_empty() {
            m.insert("shortNames".into(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            m.insert("categories".into(), json!(r.categories));
        }
        resources.push(Value::Object(m));
        let mut subs: Vec<Subresource> = r.subresources.to_vec();
        subs.sort_by_key(|s| s.name());
        for s in subs {
            let mut m = Map::new();
            m.insert("name".into(), json!(format!("{}/{}", r.plural, s.name())));
            m.insert("singularName".into(), json!(""));
            m.insert("namespaced".into(), json!(r.namespaced));
            let (g, v, k) = sub_kind(s);
            if !g.is_empty() {
                m.insert("group".into(), json!(g));
                m.insert("version".into(), json!(v));
            }
            m.insert("kind".into(), json!(if k.is_empty() { r.kind } else { k }));
            m.insert("verbs".into(), json!(s.verbs()));
            resources.push(Value::Object(m));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

fn aggregated_resource(r: &ResourceDef) -> Value {
    let mut m = Map::new();
    m.insert("resource".into(), json!(r.plural));
    m.insert(
        "responseKind".into(),
        json!({"group": "", "kind": r.kind, "version": ""}),
    );
    m.insert(
        "scope".into(),
        json!(if r.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    m.insert("singularResource".into(), json!(r.singular));
    if !r.short_names.is_empty() {
        m.insert("shortNames".into(), json!(r.short_names));
    }
    if !r.categories.is_empty() {
        m.insert("categories".into(), json!(r.categories));
    }
    let mut subs: Vec<Subresource> = r.subresources.to_vec();
    subs.sort_by_key(|s| s.name());
    if !subs.is_empty() {
        let list: Vec<Value> = subs
            .iter()
            .map(|s| {
                let (g, v, k) = sub_kind(*s);
                json!({
                    "responseKind": {"group": g, "kind": if k.is_empty() { r.kind } else { k }, "version": v},
                    "subresource": s.name(),
                    "verbs": s.verbs(),
                })
            })
            .collect();
        m.insert("subresources".into(), json!(list));
    }
    m.insert("verbs".into(), json!(r.verbs()));
    Value::Object(m)
}

fn aggregated_group(c: &Catalog, group: &str) -> Value {
    let versions: Vec<Value> = c
        .versions(group)
        .iter()
        .map(|v| {
            let resources: Vec<Value> = c
                .group_version(group, v)
                .into_iter()
                .map(aggregated_resource)
                .collect();
            json!({"freshness": "Current", "resources": resources, "version": v})
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// Aggregated discovery for `/api` (`core = true`) or `/apis`.
pub fn aggregated(c: &Catalog, core: bool) -> Value {
    let items: Vec<Value> = c
        .groups()
        .into_iter()
        .filter(|g| g.is_empty() == core)
        .map(|g| aggregated_group(c, g))
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "36",
        "emulationMajor": "1",
        "emulationMinor": "36",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "35",
        "gitVersion": "v1.36.0-coxswain",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert!(wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated("application/json"));
        assert!(!wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
    }

    #[test]
    fn resource_lists_carry_scale() {
        let l = resource_list(Catalog::builtin(), "apps", "v1");
        let scale = l["resources"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == "deployments/scale"))
            .cloned();
        let scale = scale.expect("deployments/scale listed");
        assert_eq!(scale["group"], "autoscaling");
        assert_eq!(scale["kind"], "Scale");
        let deploy = l["resources"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == "deployments"))
            .cloned()
            .expect("deployments");
        assert_eq!(deploy["shortNames"], json!(["deploy"]));
    }
}
