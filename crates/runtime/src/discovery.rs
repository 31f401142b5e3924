//! Server discovery: which resources the API server serves, shared by the controllers
//! that act on every resource (the garbage collector, the namespace and quota
//! controllers).
//!
//! What client-go's `discovery.ServerPreferredResources` and
//! `ServerPreferredNamespacedResources` give kube-controller-manager
//! (`staging/src/k8s.io/client-go/discovery/discovery_client.go`), plus the REST mapping
//! (kind → resource, scope) that the garbage collector needs for owner references:
//!
//! - every group and version is asked for its resources (`/api/v1`, `/apis/<g>/<v>`), in
//!   parallel; a group version that fails is recorded (`ErrGroupDiscoveryFailed`) and
//!   the others are still used (partial discovery is normal, not fatal);
//! - the *preferred* resources are, per group and resource name, the one of the preferred
//!   version, else of the first version that serves it; subresources (`pods/status`) are
//!   left out;
//! - [`Discovery::mapping`] maps any served `apiVersion` + `kind` to its resource, as a
//!   `RESTMapper` built from the same answers.
//!
//! [`SharedDiscovery`] (one per manager, [`crate::manager::Manager::discovery`]) keeps the
//! last answer for every user: a refresh asked for by several controllers at once is one
//! round of requests, and each can ask for an answer no older than it can afford.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use kube::core::ApiResource;

/// One served resource (a `metav1.APIResource` of a known group version).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name (URL segment).
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Verbs the resource supports.
    pub verbs: Vec<String>,
}

impl ResourceInfo {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether every verb of `verbs` is supported.
    pub fn supports_all(&self, verbs: &[&str]) -> bool {
        verbs
            .iter()
            .all(|v| self.verbs.iter().any(|have| have == v))
    }

    /// The resource in kube's dynamic form.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    /// The collection URL across all namespaces (`/api/v1/secrets`).
    pub fn collection_url(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}/{}", self.version, self.plural)
        } else {
            format!("/apis/{}/{}/{}", self.group, self.version, self.plural)
        }
    }

    /// The group/version/resource, formatted as upstream's
    /// `schema.GroupVersionResource.String()` (`apps/v1, Resource=deployments`).
    pub fn gvr(&self) -> Gvr {
        Gvr {
            group: self.group.clone(),
            version: self.version.clone(),
            resource: self.plural.clone(),
        }
    }
}

/// A group, version and resource (upstream `schema.GroupVersionResource`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvr {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
}

impl fmt::Display for Gvr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// Parse a `groupVersion` string as upstream `schema.ParseGroupVersion`: `v1`, `apps/v1`;
/// the empty string is the empty group version.
pub fn parse_group_version(gv: &str) -> Result<(String, String), String> {
    if gv.is_empty() || gv == "/" {
        return Ok((String::new(), String::new()));
    }
    match gv.split('/').collect::<Vec<_>>().as_slice() {
        [v] => Ok((String::new(), (*v).to_string())),
        [g, v] => Ok(((*g).to_string(), (*v).to_string())),
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// What one discovery pass found.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    /// Preferred resources of every group (subresources excluded).
    pub preferred: Vec<Arc<ResourceInfo>>,
    /// `(group, version, kind)` → resource, for every served version.
    mapping: HashMap<(String, String, String), Arc<ResourceInfo>>,
    /// Group versions whose resources could not be listed: `group/version` → error.
    pub failed: BTreeMap<String, String>,
    /// Resource lists whose `groupVersion` does not parse (the first error of
    /// upstream `discovery.GroupVersionResources`).
    pub parse_error: Option<String>,
}

impl Discovery {
    /// The resource serving `kind` in `api_version`, if any (a `RESTMapper` lookup).
    pub fn mapping(&self, api_version: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        let (group, version) = parse_group_version(api_version).ok()?;
        self.mapping.get(&(group, version, kind.to_string()))
    }

    /// Upstream `ErrGroupDiscoveryFailed.Error()`, when some group versions failed.
    pub fn failure_message(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let groups: Vec<String> = self
            .failed
            .iter()
            .map(|(gv, e)| format!("{gv}: {e}"))
            .collect();
        Some(format!(
            "unable to retrieve the complete list of server APIs: {}",
            groups.join(", ")
        ))
    }

    /// Preferred resources that support every verb of `verbs`.
    pub fn preferred_supporting(&self, verbs: &[&str]) -> Vec<Arc<ResourceInfo>> {
        self.preferred
            .iter()
            .filter(|r| r.supports_all(verbs))
            .cloned()
            .collect()
    }

    /// Build from answers already fetched: for each group (in server order), its versions
    /// (preferred one named) and each version's resource list (or the error listing it).
    pub fn from_lists(groups: Vec<GroupAnswer>) -> Discovery {
        let mut out = Discovery::default();
        // (group, resource) → chosen version's resource, in first-seen order
        let mut chosen: Vec<((String, String), Arc<ResourceInfo>)> = Vec::new();
        let mut index: HashMap<(String, String), usize> = HashMap::new();
        for g in groups {
            for (version, answer) in g.versions {
                let list = match answer {
                    Ok(list) => list,
                    Err(e) => {
                        let gv = if g.name.is_empty() {
                            version.clone()
                        } else {
                            format!("{}/{}", g.name, version)
                        };
                        out.failed.insert(gv, e);
                        continue;
                    }
                };
                let (group, parsed_version) = match parse_group_version(&list.group_version) {
                    Ok(gv) => gv,
                    Err(e) => {
                        out.parse_error.get_or_insert(e);
                        continue;
                    }
                };
                for r in &list.resources {
                    if r.name.contains('/') {
                        continue;
                    }
                    let info = Arc::new(ResourceInfo {
                        group: group.clone(),
                        version: parsed_version.clone(),
                        kind: r.kind.clone(),
                        plural: r.name.clone(),
                        namespaced: r.namespaced,
                        verbs: r.verbs.clone(),
                    });
                    out.mapping
                        .entry((group.clone(), parsed_version.clone(), r.kind.clone()))
                        .or_insert_with(|| info.clone());
                    let key = (group.clone(), r.name.clone());
                    let preferred = g.preferred.as_deref() == Some(version.as_str());
                    match index.get(&key) {
                        Some(&i) if preferred => chosen[i].1 = info,
                        Some(_) => {}
                        None => {
                            index.insert(key.clone(), chosen.len());
                            chosen.push((key, info));
                        }
                    }
                }
            }
        }
        out.preferred = chosen.into_iter().map(|(_, r)| r).collect();
        out
    }

    /// Ask the server (legacy discovery: `/api`, `/apis`, then each group version).
    /// Fails only when the group lists themselves cannot be read; a failing group version
    /// is recorded in [`Discovery::failed`].
    pub async fn run(client: &kube::Client) -> Result<Discovery, kube::Error> {
        let core = client.list_core_api_versions().await?;
        let apis = client.list_api_groups().await?;
        let mut plan: Vec<(String, Option<String>, Vec<String>)> = Vec::new();
        plan.push((String::new(), core.versions.first().cloned(), core.versions));
        for g in apis.groups {
            let preferred = g.preferred_version.map(|p| p.version);
            let versions = g.versions.into_iter().map(|v| v.version).collect();
            plan.push((g.name, preferred, versions));
        }
        let fetches = plan.iter().map(|(group, _, versions)| {
            join_all(versions.iter().map(move |v| async move {
                let answer = if group.is_empty() {
                    client.list_core_api_resources(v).await
                } else {
                    client
                        .list_api_group_resources(&format!("{group}/{v}"))
                        .await
                };
                let answer = answer
                    .map(|list| ResourceList {
                        group_version: list.group_version,
                        resources: list
                            .resources
                            .into_iter()
                            .map(|r| ResourceEntry {
                                name: r.name,
                                kind: r.kind,
                                namespaced: r.namespaced,
                                verbs: r.verbs,
                            })
                            .collect(),
                    })
                    .map_err(|e| e.to_string());
                (v.clone(), answer)
            }))
        });
        let answers = join_all(fetches).await;
        let groups = plan
            .into_iter()
            .zip(answers)
            .map(|((name, preferred, _), versions)| GroupAnswer {
                name,
                preferred,
                versions,
            })
            .collect();
        Ok(Discovery::from_lists(groups))
    }
}

/// The last discovery answer, shared by every controller of a process.
#[derive(Clone)]
pub struct SharedDiscovery {
    inner: Arc<SharedInner>,
}

struct SharedInner {
    client: kube::Client,
    current: tokio::sync::watch::Sender<Arc<Discovery>>,
    /// when `current` was fetched (`None`: never)
    fetched: Mutex<Option<Instant>>,
    /// one refresh at a time
    refreshing: tokio::sync::Mutex<()>,
}

impl fmt::Debug for SharedDiscovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedDiscovery")
            .field("resources", &self.current().preferred.len())
            .finish_non_exhaustive()
    }
}

impl SharedDiscovery {
    /// Discovery through `client`; nothing is asked until the first refresh.
    pub fn new(client: kube::Client) -> Self {
        SharedDiscovery {
            inner: Arc::new(SharedInner {
                client,
                current: tokio::sync::watch::channel(Arc::new(Discovery::default())).0,
                fetched: Mutex::new(None),
                refreshing: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The last answer (empty before the first refresh).
    pub fn current(&self) -> Arc<Discovery> {
        self.inner.current.borrow().clone()
    }

    /// Learn of every new answer.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Arc<Discovery>> {
        self.inner.current.subscribe()
    }

    fn fetched_after(&self, t: Instant) -> bool {
        self.inner
            .fetched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|f| f >= t)
    }

    /// Ask the server again. Callers that arrive while a refresh runs share its answer.
    /// A failed refresh keeps the last answer.
    pub async fn refresh(&self) -> Result<Arc<Discovery>, kube::Error> {
        let asked = Instant::now();
        let _one = self.inner.refreshing.lock().await;
        if self.fetched_after(asked) {
            return Ok(self.current());
        }
        let started = Instant::now();
        let d = Arc::new(Discovery::run(&self.inner.client).await?);
        *self.inner.fetched.lock().unwrap_or_else(|e| e.into_inner()) = Some(started);
        self.inner.current.send_replace(d.clone());
        Ok(d)
    }

    /// The last answer if it is at most `max_age` old, else a fresh one.
    pub async fn fresh(&self, max_age: Duration) -> Result<Arc<Discovery>, kube::Error> {
        let recent = Instant::now().checked_sub(max_age);
        if let Some(t) = recent {
            if self.fetched_after(t) {
                return Ok(self.current());
            }
        }
        self.refresh().await
    }
}

/// One group's discovery answers (input of [`Discovery::from_lists`]).
#[derive(Clone, Debug)]
pub struct GroupAnswer {
    /// Group name (`""` for core).
    pub name: String,
    /// The preferred version.
    pub preferred: Option<String>,
    /// Each version, in server order, with its resource list or the error fetching it.
    pub versions: Vec<(String, Result<ResourceList, String>)>,
}

/// A group version's resources (`metav1.APIResourceList`, the parts used).
#[derive(Clone, Debug)]
pub struct ResourceList {
    /// `groupVersion` as the server wrote it.
    pub group_version: String,
    /// The resources.
    pub resources: Vec<ResourceEntry>,
}

/// One `metav1.APIResource` (the parts used).
#[derive(Clone, Debug)]
pub struct ResourceEntry {
    /// Plural name, or `plural/subresource`.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Scope.
    pub namespaced: bool,
    /// Verbs.
    pub verbs: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, kind: &str, namespaced: bool, verbs: &[&str]) -> ResourceEntry {
        ResourceEntry {
            name: name.into(),
            kind: kind.into(),
            namespaced,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn list(gv: &str, resources: Vec<ResourceEntry>) -> Result<ResourceList, String> {
        Ok(ResourceList {
            group_version: gv.into(),
            resources,
        })
    }

    const ALL: &[&str] = &[
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "watch",
    ];

    #[test]
    fn preferred_resources_follow_client_go() {
        let d = Discovery::from_lists(vec![
            GroupAnswer {
                name: String::new(),
                preferred: Some("v1".into()),
                versions: vec![(
                    "v1".into(),
                    list(
                        "v1",
                        vec![
                            entry("pods", "Pod", true, ALL),
                            entry("pods/status", "Pod", true, &["get"]),
                            entry("namespaces", "Namespace", false, &["get", "list"]),
                        ],
                    ),
                )],
            },
            GroupAnswer {
                name: "batch".into(),
                preferred: Some("v2".into()),
                versions: vec![
                    (
                        "v1".into(),
                        list(
                            "batch/v1",
                            vec![
                                entry("jobs", "Job", true, ALL),
                                entry("cronjobs", "CronJob", true, ALL),
                            ],
                        ),
                    ),
                    (
                        "v2".into(),
                        list("batch/v2", vec![entry("jobs", "Job", true, ALL)]),
                    ),
                    ("v3".into(), Err("the server is on fire".into())),
                ],
            },
            GroupAnswer {
                name: "bad".into(),
                preferred: Some("v1".into()),
                versions: vec![("v1".into(), list("bad/v1/x", vec![]))],
            },
        ]);
        let names: Vec<String> = d
            .preferred
            .iter()
            .map(|r| format!("{}:{}", r.api_version(), r.plural))
            .collect();
        // the preferred version wins; a resource only in another version still counts
        assert_eq!(
            names,
            [
                "v1:pods",
                "v1:namespaces",
                "batch/v2:jobs",
                "batch/v1:cronjobs"
            ]
        );
        assert_eq!(
            d.failure_message().as_deref(),
            Some("unable to retrieve the complete list of server APIs: batch/v3: the server is on fire")
        );
        assert_eq!(
            d.parse_error.as_deref(),
            Some("unexpected GroupVersion string: bad/v1/x")
        );
        // every served version maps
        assert_eq!(
            d.mapping("batch/v1", "Job").map(|r| r.version.as_str()),
            Some("v1")
        );
        assert_eq!(
            d.mapping("batch/v2", "Job").map(|r| r.version.as_str()),
            Some("v2")
        );
        assert!(d.mapping("batch/v9", "Job").is_none());
        assert!(d.mapping("v1", "Namespace").is_some_and(|r| !r.namespaced));
        let deletable: Vec<String> = d
            .preferred_supporting(&["delete", "list", "watch"])
            .iter()
            .map(|r| r.plural.clone())
            .collect();
        assert_eq!(deletable, ["pods", "jobs", "cronjobs"]);
        assert_eq!(
            d.mapping("apps/v1", "Deployment")
                .map(|r| r.gvr().to_string()),
            None
        );
        assert_eq!(d.preferred[2].gvr().to_string(), "batch/v2, Resource=jobs");
    }

    #[test]
    fn group_versions_parse_as_upstream() {
        assert_eq!(parse_group_version("v1"), Ok(("".into(), "v1".into())));
        assert_eq!(
            parse_group_version("apps/v1"),
            Ok(("apps".into(), "v1".into()))
        );
        assert_eq!(parse_group_version(""), Ok(("".into(), "".into())));
        assert!(parse_group_version("a/b/c").is_err());
    }
}
