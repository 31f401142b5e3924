//! The legacy token controller against the embedded API server: a
//! `kubernetes.io/service-account-token` Secret gets a legacy JWT signed with the key
//! of `--service-account-private-key-file`, the CA and the namespace; it is deleted with
//! its account, and a token of an account that does not exist is deleted.

use std::collections::BTreeMap;

use coxswain_controllers::registry::{ControllerContext, ControllerManagerOptions};
use coxswain_controllers::serviceaccount;
use coxswain_runtime::envtest;
use coxswain_runtime::manager::{Manager, ManagerOptions};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::wait_for;

fn object<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

fn token_secret(name: &str, account: &str) -> Secret {
    object(json!({
        "metadata": {
            "name": name,
            "annotations": {"kubernetes.io/service-account.name": account},
        },
        "type": "kubernetes.io/service-account-token",
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_secrets_are_filled_and_follow_their_account() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let key = apimachinery::serviceaccount::SigningKey::generate().expect("a key");
    let key_file = env.data_dir().join("controller-sa.key");
    std::fs::write(&key_file, key.to_pem()).expect("key written");

    let mut options = ControllerManagerOptions::default();
    options.service_account.service_account_key_file = Some(key_file);
    options.service_account.root_ca = Some("CA Data".to_string());
    let manager = Manager::new(
        env.kube_config().await.expect("client config"),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let ctx = ControllerContext::new(&manager, &options);
    let controller = (serviceaccount::token_descriptor().constructor)(&ctx)
        .expect("constructed")
        .expect("on with a private key");
    manager.add(controller).expect("added");
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let task = tokio::spawn(async move { manager.start(stop).await.expect("manager runs") });

    let ns = "tokens";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": ns}})),
        )
        .await
        .expect("namespace");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let sa = accounts
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": "builder"}})),
        )
        .await
        .expect("account");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    secrets
        .create(
            &PostParams::default(),
            &token_secret("builder-token", "builder"),
        )
        .await
        .expect("token secret");

    let filled = wait_for("the token secret's data", || async {
        let s = secrets.get("builder-token").await.ok()?;
        let data = s.data.clone()?;
        data.contains_key("token").then_some(s)
    })
    .await;
    let data: BTreeMap<String, Vec<u8>> = filled
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(data.get("ca.crt").map(Vec::as_slice), Some(&b"CA Data"[..]));
    assert_eq!(
        data.get("namespace").map(Vec::as_slice),
        Some(ns.as_bytes())
    );
    assert_eq!(
        filled
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kubernetes.io/service-account.uid")),
        sa.metadata.uid.as_ref()
    );
    let token = String::from_utf8(data["token"].clone()).expect("a text token");
    let parsed = apimachinery::serviceaccount::jwt::parse(&token).expect("a JWT");
    parsed
        .verify(&[key.public_key()])
        .expect("signed with the controller's key");
    let claims = apimachinery::serviceaccount::jwt::unverified_claims(&token).expect("claims");
    assert_eq!(claims["iss"], "kubernetes/serviceaccount");
    assert_eq!(claims["sub"], "system:serviceaccount:tokens:builder");
    assert_eq!(
        claims["kubernetes.io/serviceaccount/secret.name"],
        "builder-token"
    );
    assert_eq!(
        claims["kubernetes.io/serviceaccount/service-account.uid"],
        json!(sa.metadata.uid)
    );

    // a token of an account that does not exist is deleted
    secrets
        .create(
            &PostParams::default(),
            &token_secret("ghost-token", "ghost"),
        )
        .await
        .expect("orphan token secret");
    wait_for("the orphan token to go", || async {
        matches!(secrets.get_opt("ghost-token").await, Ok(None)).then_some(())
    })
    .await;

    // the account's tokens go with it
    accounts
        .delete("builder", &DeleteParams::default())
        .await
        .expect("account deleted");
    wait_for("the account's token to go", || async {
        matches!(secrets.get_opt("builder-token").await, Ok(None)).then_some(())
    })
    .await;

    cancel.cancel();
    task.await.expect("manager task");
}

#[tokio::test]
async fn the_token_controller_needs_a_private_key() {
    let env = envtest::start().await.expect("test server");
    let manager = Manager::new(
        env.kube_config().await.expect("client config"),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let options = ControllerManagerOptions::default();
    let ctx = ControllerContext::new(&manager, &options);
    let built = (serviceaccount::token_descriptor().constructor)(&ctx).expect("no error");
    assert!(
        built.is_none(),
        "off without --service-account-private-key-file"
    );
    let mut options = ControllerManagerOptions::default();
    options.service_account.service_account_key_file = Some(env.data_dir().join("missing.key"));
    let ctx = ControllerContext::new(&manager, &options);
    let err = (serviceaccount::token_descriptor().constructor)(&ctx)
        .err()
        .expect("an unreadable key is an error");
    assert!(
        err.starts_with("error reading key for service account token controller"),
        "{err}"
    );
}
