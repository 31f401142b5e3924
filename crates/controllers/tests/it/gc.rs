//! The garbage collector against the embedded API server: background, foreground and
//! orphan deletion, dangling and invalid references, chains, several owners, cycles.
//!
//! Assertions are about outcomes and orderings (an owner outlives its blocking
//! dependents, a dependent outlives one of its two owners); nothing asserts speed.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::garbagecollector;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::{json, Value};

const NS: &str = "gc";

async fn start() -> Harness {
    common::logs();
    let h = Harness::start(&[garbagecollector::descriptor()]).await;
    h.namespace(NS).await;
    h.namespace("other").await;
    h
}

/// An owner reference to `owner`.
fn owner_ref<K: Resource<DynamicType = ()>>(owner: &K, block: bool) -> Value {
    json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "name": owner.meta().name,
        "uid": owner.meta().uid,
        "blockOwnerDeletion": block,
    })
}

async fn create_cm(client: &kube::Client, ns: &str, name: &str, owners: Vec<Value>) -> ConfigMap {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": owners},
        "data": {"k": "v"},
    }))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .expect("configmap created")
}

async fn create_secret(
    client: &kube::Client,
    ns: &str,
    name: &str,
    owners: Vec<Value>,
    finalizers: &[&str],
) -> Secret {
    let s: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
        "stringData": {"k": "v"},
    }))
    .expect("secret");
    Api::<Secret>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &s)
        .await
        .expect("secret created")
}

async fn exists<K>(api: &Api<K>, name: &str) -> bool
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.expect("get").is_some()
}

async fn gone<K>(what: &str, api: &Api<K>, name: &str)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(what, || async { (!exists(api, name).await).then_some(()) }).await;
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let owner = create_cm(&c, NS, "owner", vec![]).await;
    for i in 0..3 {
        create_secret(
            &c,
            NS,
            &format!("dep-{i}"),
            vec![owner_ref(&owner, false)],
            &[],
        )
        .await;
    }
    let bystander = create_secret(&c, NS, "bystander", vec![], &[]).await;
    cms.delete("owner", &DeleteParams::default())
        .await
        .expect("delete owner");
    for i in 0..3 {
        gone("dependent collected", &secrets, &format!("dep-{i}")).await;
    }
    assert!(
        exists(&secrets, &bystander.name_any()).await,
        "an object without owners is left alone"
    );
    // the collector publishes its metrics: a graph that is not empty, the queue depths
    wait_for("graph metrics", || async {
        let text = coxswain_runtime::metrics::global().encode();
        let nodes: i64 = text
            .lines()
            .find_map(|l| l.strip_prefix("garbagecollector_controller_graph_nodes "))?
            .trim()
            .parse()
            .ok()?;
        (nodes > 0
            && text.contains("garbagecollector_controller_attempt_to_delete_queue_depth")
            && text.contains("garbagecollector_controller_attempt_to_orphan_queue_depth")
            && text.contains("garbage_collector_attempt_to_delete"))
        .then_some(())
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn chains_are_collected_transitively() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let a = create_cm(&c, NS, "a", vec![]).await;
    let b = create_cm(&c, NS, "b", vec![owner_ref(&a, false)]).await;
    create_secret(&c, NS, "c", vec![owner_ref(&b, false)], &[]).await;
    cms.delete("a", &DeleteParams::default())
        .await
        .expect("delete a");
    gone("b collected", &cms, "b").await;
    gone("c collected", &secrets, "c").await;
    h.stop().await;
}

#[tokio::test]
async fn a_dependent_with_two_owners_outlives_the_first() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let one = create_cm(&c, NS, "one", vec![]).await;
    let two = create_cm(&c, NS, "two", vec![]).await;
    create_secret(
        &c,
        NS,
        "shared",
        vec![owner_ref(&one, false), owner_ref(&two, false)],
        &[],
    )
    .await;
    // a sentinel owned by `one` alone shows when the collector has dealt with its deletion
    create_secret(&c, NS, "sentinel", vec![owner_ref(&one, false)], &[]).await;
    cms.delete("one", &DeleteParams::default())
        .await
        .expect("delete one");
    gone("sentinel collected", &secrets, "sentinel").await;
    let shared = secrets
        .get("shared")
        .await
        .expect("shared survives its first owner");
    assert!(shared.metadata.deletion_timestamp.is_none());
    cms.delete("two", &DeleteParams::default())
        .await
        .expect("delete two");
    gone("shared collected with its last owner", &secrets, "shared").await;
    h.stop().await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let owner = create_cm(&c, NS, "owner", vec![]).await;
    // the blocking dependent holds a finalizer of its own: it stays "being deleted"
    create_secret(
        &c,
        NS,
        "blocking",
        vec![owner_ref(&owner, true)],
        &["test.coxswain.dev/hold"],
    )
    .await;
    create_secret(&c, NS, "plain", vec![owner_ref(&owner, false)], &[]).await;
    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete owner");
    let held = cms
        .get("owner")
        .await
        .expect("owner kept while dependents remain");
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(held.finalizers().iter().any(|f| f == "foregroundDeletion"));
    // the collector deletes the blocking dependent, which waits on its own finalizer
    wait_for("blocking dependent deleted", || async {
        secrets
            .get("blocking")
            .await
            .ok()
            .and_then(|s| s.metadata.deletion_timestamp)
    })
    .await;
    gone("non-blocking dependent collected", &secrets, "plain").await;
    let still = cms
        .get("owner")
        .await
        .expect("owner outlives its blocking dependent");
    assert!(still.finalizers().iter().any(|f| f == "foregroundDeletion"));
    secrets
        .patch(
            "blocking",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the dependent");
    gone("blocking dependent removed", &secrets, "blocking").await;
    gone("owner removed last", &cms, "owner").await;
    h.stop().await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let owner = create_cm(&c, NS, "owner", vec![]).await;
    let other = create_cm(&c, NS, "other", vec![]).await;
    create_secret(
        &c,
        NS,
        "dep",
        vec![owner_ref(&owner, true), owner_ref(&other, false)],
        &[],
    )
    .await;
    cms.delete("owner", &DeleteParams::orphan())
        .await
        .expect("delete owner");
    gone("orphaned owner removed", &cms, "owner").await;
    let dep = secrets.get("dep").await.expect("dependent kept");
    let uids: Vec<String> = dep
        .owner_references()
        .iter()
        .map(|r| r.uid.clone())
        .collect();
    assert_eq!(
        uids,
        [other.uid().expect("uid")],
        "only the reference to the orphaning owner goes"
    );
    assert!(dep.metadata.deletion_timestamp.is_none());
    h.stop().await;
}

#[tokio::test]
async fn dangling_references_are_collected() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let real = create_cm(&c, NS, "real", vec![]).await;
    let mut wrong_uid = owner_ref(&real, false);
    wrong_uid["uid"] = json!("4f2b0c3e-0000-4000-8000-000000000000");
    create_secret(&c, NS, "wrong-uid", vec![wrong_uid], &[]).await;
    let ghost =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "not-a-uuid"});
    create_secret(&c, NS, "ghost-owner", vec![ghost], &[]).await;
    let fine = create_secret(&c, NS, "fine", vec![owner_ref(&real, false)], &[]).await;
    gone(
        "dependent of a recreated owner collected",
        &secrets,
        "wrong-uid",
    )
    .await;
    gone(
        "dependent of a missing owner collected",
        &secrets,
        "ghost-owner",
    )
    .await;
    assert!(
        exists(&cms, "real").await,
        "the owner with the other UID is untouched"
    );
    assert!(
        exists(&secrets, &fine.name_any()).await,
        "a valid reference keeps its dependent"
    );
    h.stop().await;
}

#[tokio::test]
async fn owners_of_other_kinds_and_scopes() {
    let h = start().await;
    let c = h.client();
    let roles = Api::<ClusterRole>::all(c.clone());
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    // a cluster-scoped owner (another API group) of namespaced dependents
    let role: ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": "gc-owner"}, "rules": []}))
            .expect("role");
    let role = roles
        .create(&PostParams::default(), &role)
        .await
        .expect("role created");
    create_cm(&c, NS, "by-role", vec![owner_ref(&role, false)]).await;
    create_secret(&c, "other", "by-role", vec![owner_ref(&role, false)], &[]).await;
    let other_secrets = Api::<Secret>::namespaced(c.clone(), "other");
    roles
        .delete("gc-owner", &DeleteParams::default())
        .await
        .expect("delete role");
    gone(
        "configmap owned by a cluster role collected",
        &cms,
        "by-role",
    )
    .await;
    gone(
        "secret owned by a cluster role collected",
        &other_secrets,
        "by-role",
    )
    .await;
    // a namespaced owner in another namespace does not count: the dependent goes
    let owner = create_cm(&c, NS, "owner", vec![]).await;
    create_secret(&c, "other", "cross", vec![owner_ref(&owner, false)], &[]).await;
    gone(
        "dependent naming an owner in another namespace collected",
        &other_secrets,
        "cross",
    )
    .await;
    assert!(exists(&cms, "owner").await);
    let events = Api::<Event>::namespaced(c.clone(), "other");
    wait_for("OwnerRefInvalidNamespace event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("OwnerRefInvalidNamespace")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("cross")
        })
    })
    .await;
    let _ = secrets;
    h.stop().await;
}

#[tokio::test]
async fn cluster_scoped_dependents_of_namespaced_owners_are_reported_not_deleted() {
    let h = start().await;
    let c = h.client();
    let roles = Api::<ClusterRole>::all(c.clone());
    let owner = create_cm(&c, NS, "owner", vec![]).await;
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "invalid-dependent", "ownerReferences": [owner_ref(&owner, false)]},
        "rules": [],
    }))
    .expect("role");
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("role created");
    let events = Api::<Event>::namespaced(c.clone(), "default");
    let event = wait_for("event about the invalid reference", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("OwnerRefInvalidNamespace")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("invalid-dependent")
        })
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let role = roles.get("invalid-dependent").await.expect("not deleted");
    assert!(role.metadata.deletion_timestamp.is_none());
    h.stop().await;
}

#[tokio::test]
async fn foreground_cycles_complete() {
    let h = start().await;
    let c = h.client();
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let a = create_cm(&c, NS, "a", vec![]).await;
    let b = create_cm(&c, NS, "b", vec![owner_ref(&a, true)]).await;
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [owner_ref(&b, true)]}})),
    )
    .await
    .expect("close the cycle");
    let me = create_cm(&c, NS, "self", vec![]).await;
    cms.patch(
        "self",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [owner_ref(&me, true)]}})),
    )
    .await
    .expect("own itself");
    // two objects owning each other, both deleted in the foreground: they wait for each
    // other until the collector makes one reference non-blocking
    let x = create_cm(&c, NS, "x", vec![]).await;
    let y = create_cm(&c, NS, "y", vec![owner_ref(&x, true)]).await;
    cms.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [owner_ref(&y, true)]}})),
    )
    .await
    .expect("close the second cycle");
    cms.delete("a", &DeleteParams::foreground())
        .await
        .expect("delete a");
    cms.delete("self", &DeleteParams::foreground())
        .await
        .expect("delete self");
    cms.delete("x", &DeleteParams::foreground())
        .await
        .expect("delete x");
    cms.delete("y", &DeleteParams::foreground())
        .await
        .expect("delete y");
    gone("x deleted", &cms, "x").await;
    gone("y deleted", &cms, "y").await;
    gone("a deleted", &cms, "a").await;
    gone("b deleted", &cms, "b").await;
    gone("self deleted", &cms, "self").await;
    h.stop().await;
}

/// Every built-in controller on one manager: the garbage collector's monitors and the
/// controllers' typed informers share the cache, so the API server holds exactly one
/// watch per resource (the typed informers of pods, ReplicaSets, ... serve the collector
/// as metadata instead of a second, metadata-only watch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_manager_watches_each_resource_once() {
    use coxswain_controllers::registry::{ControllerContext, ControllerManagerOptions};
    use coxswain_runtime::manager::{Manager, ManagerOptions};
    common::logs();
    let env = coxswain_runtime::envtest::start().await.expect("env");
    let mgr = Manager::new(
        env.kube_config().await.expect("config"),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let options = ControllerManagerOptions::default();
    let ctx = ControllerContext::new(&mgr, &options);
    let registry = coxswain_controllers::builtin();
    for d in registry.descriptors() {
        if d.name == garbagecollector::NAME {
            continue;
        }
        // off by default as upstream (the node IPAM controller without
        // --allocate-node-cidrs)
        let Some(c) = (d.constructor)(&ctx).expect("constructed") else {
            continue;
        };
        mgr.add(c).expect("added");
    }
    // the collector by hand, to see when its monitors synced
    let gc = garbagecollector::GarbageCollector::new(
        mgr.cache().clone(),
        mgr.discovery().clone(),
        None,
        Default::default(),
    );
    let handle = gc.handle();
    mgr.add(gc).expect("added");
    let cache = mgr.cache().clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let token = cancel.clone();
    let run = tokio::spawn(async move { mgr.start(token).await });
    let discovery = coxswain_runtime::discovery::Discovery::run(&env.client)
        .await
        .expect("discovery");
    let resources = discovery
        .preferred_supporting(&["delete", "list", "watch"])
        .into_iter()
        .filter(|r| r.plural != "events")
        .count();
    wait_for("every informer synced", || {
        let ok = handle.is_synced() && handle.monitors() == resources && cache.synced();
        async move { ok.then_some(()) }
    })
    .await;
    assert_eq!(
        env.server().watcher_count(),
        resources,
        "one watch per resource ({resources} resources; the cache runs {} informers)",
        cache.informer_count()
    );
    assert_eq!(cache.informer_count(), resources);
    cancel.cancel();
    let _ = run.await;
}
