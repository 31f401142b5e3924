//! An operator's custom resource end to end on the embedded API server: a CRD generated
//! with kube-derive is applied (server-side), served, validated (bad objects rejected
//! with field causes), defaulted and pruned by its schema, and a controller written with
//! this runtime reconciles it (an owned ConfigMap and the status subresource).

use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::envtest;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

fn default_image() -> String {
    "nginx:1.27".into()
}

/// A website: some replicas of an image, and a page the operator publishes.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "demo.coxswain.dev",
    version = "v1",
    kind = "Website",
    namespaced,
    status = "WebsiteStatus",
    shortname = "ws",
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"boolean","jsonPath":".status.ready"}"#
)]
pub struct WebsiteSpec {
    /// Desired replicas.
    #[schemars(range(min = 0, max = 10))]
    pub replicas: i32,
    /// Image to serve.
    #[serde(default = "default_image")]
    pub image: String,
    /// The page's text.
    pub page: String,
}

/// What the operator observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WebsiteStatus {
    /// Whether the page is published.
    pub ready: bool,
}

async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out: {what}");
}

async fn publish(cache: Arc<Cache>, key: ObjectKey) -> ReconcileResult {
    let Some(site) = cache.get::<Website>(&key).await else {
        return Ok(Action::Done);
    };
    let ns = key.namespace().unwrap_or_default().to_string();
    let owner = site
        .controller_owner_ref(&())
        .ok_or_else(|| coxswain_runtime::controller::ReconcileError::terminal("no uid"))?;
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("{}-page", key.name()));
    cm.metadata.owner_references = Some(vec![owner]);
    cm.data = Some([("index.html".to_string(), site.spec.page.clone())].into());
    let client = cache.client().clone();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.patch(
        cm.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::apply("website-operator").force(),
        &Patch::Apply(&cm),
    )
    .await?;
    let sites: Api<Website> = Api::namespaced(client, &ns);
    sites
        .patch_status(
            key.name(),
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"ready": true}})),
        )
        .await?;
    Ok(Action::Done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_crd_is_served_validated_and_reconciled() {
    let env = envtest::start().await.expect("env");
    let client = env.client.clone();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        Website::crd_name(),
        &PatchParams::apply("test").force(),
        &Patch::Apply(Website::crd()),
    )
    .await
    .expect("apply CRD");
    eventually("CRD established", async || {
        crds.get(Website::crd_name()).await.ok().is_some_and(|c| {
            c.status.and_then(|s| s.conditions).is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
        })
    })
    .await;

    let sites: Api<Website> = Api::namespaced(client.clone(), "default");
    // a bad object is rejected with a field cause
    let mut bad = Website::new(
        "bad",
        WebsiteSpec {
            replicas: 50,
            image: "x".into(),
            page: "p".into(),
        },
    );
    bad.metadata.namespace = Some("default".into());
    match sites.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert_eq!(e.reason, "Invalid");
            assert!(e.message.contains("spec.replicas"), "{}", e.message);
        }
        other => panic!("bad object accepted: {other:?}"),
    }
    // defaulted and pruned: created from raw JSON without image and with an unknown field
    let raw: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::erase::<Website>(&()),
    );
    let created = raw
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "apiVersion": "demo.coxswain.dev/v1", "kind": "Website",
                "metadata": {"name": "home"},
                "spec": {"replicas": 2, "page": "hello", "unknown": 1}
            }))
            .expect("object"),
        )
        .await
        .expect("create website");
    assert_eq!(created.data["spec"]["image"], "nginx:1.27");
    assert!(created.data["spec"].get("unknown").is_none());

    // the controller reconciles it
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(client.clone(), cancel.clone()));
    let c = cache.clone();
    let controller = ControllerBuilder::new(&cache)
        .named("website")
        .for_::<Website>()
        .owns::<ConfigMap>()
        .build(move |_ctx, key| publish(c.clone(), key));
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    eventually("page published", async || {
        cms.get_opt("home-page")
            .await
            .ok()
            .flatten()
            .is_some_and(|cm| {
                cm.data
                    .and_then(|d| d.get("index.html").cloned())
                    .as_deref()
                    == Some("hello")
                    && cm
                        .metadata
                        .owner_references
                        .is_some_and(|o| o[0].kind == "Website")
            })
    })
    .await;
    eventually("status ready", async || {
        sites
            .get("home")
            .await
            .ok()
            .is_some_and(|s| s.status.is_some_and(|st| st.ready))
    })
    .await;
    let site = sites.get("home").await.expect("get");
    assert_eq!(
        site.metadata.generation,
        Some(1),
        "status writes keep the generation"
    );
    let managers: Vec<String> = site
        .managed_fields()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(!managers.is_empty(), "managedFields recorded: {managers:?}");
    cancel.cancel();
    let _ = run.await;
}
