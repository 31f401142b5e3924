//! The ServiceAccount admission plugin (upstream
//! `plugin/pkg/admission/serviceaccount/admission.go`), on pod creation: a pod without
//! `serviceAccountName` runs as its namespace's `default` account; a pod whose account
//! does not exist is refused (403 `error looking up service account NS/NAME:
//! serviceaccount "NAME" not found`, which a controller creating pods reports and
//! retries; the `default` account is waited for up to about 1.5 s first, as upstream
//! looks it up again, since its controller creates it just after the namespace); unless the pod or its account turns automounting off, every container and
//! init container mounts the account's API credentials at
//! `/var/run/secrets/kubernetes.io/serviceaccount` from a projected
//! `kube-api-access-<random>` volume (a bound token of 3607 s, the cluster CA from
//! `kube-root-ca.crt`, the namespace), as kube-apiserver adds them; a pod without
//! `imagePullSecrets` gets its account's.
//!
//! A server that runs no service account controller (`coxswain apiserver` alone, test
//! servers) turns the plugin off with `--disable-admission-plugins=ServiceAccount`, as
//! controller-runtime's envtest does; otherwise no pod is admitted there until its
//! account is created.
//!
//! Not done: the `kubernetes.io/enforce-mountable-secrets` annotation (deprecated
//! upstream) and the mirror pod refusals (coxswain's kubelets create no mirror pods).

use serde_json::{json, Value};

use crate::endpoints::Api;

/// Where the credentials are mounted in each container.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token's lifetime in the projected volume (upstream: one hour plus 7 seconds).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// Mirror pods (static pods of a kubelet) are left alone.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

impl Api {
    /// Apply the plugin to a Pod being created in `namespace`. `Err`: why it is
    /// refused (403): its service account does not exist.
    pub(super) async fn admit_service_account(
        &self,
        namespace: Option<&str>,
        pod: &mut Value,
    ) -> Result<(), String> {
        if pod
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
        {
            return Ok(());
        }
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => "default".to_string(),
        };
        spec.insert("serviceAccountName".into(), json!(name));
        spec.insert("serviceAccount".into(), json!(name));
        let Some(ns) = namespace else {
            return Ok(());
        };
        let lookup_error =
            |why: String| format!("error looking up service account {ns}/{name}: {why}");
        let account = match self.service_account(ns, &name).await {
            Some(stored) => stored
                .value()
                .map_err(|e| lookup_error(e.message.clone()))?,
            None => return Err(lookup_error(format!("serviceaccount \"{name}\" not found"))),
        };
        let automount = spec
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .or_else(|| {
                account
                    .get("automountServiceAccountToken")
                    .and_then(Value::as_bool)
            })
            .unwrap_or(true);
        if automount {
            mount_token(spec);
        }
        copy_pull_secrets(&account, spec);
        Ok(())
    }

    /// The stored service account `ns/name`. The namespace's `default` account is
    /// created by the service account controller just after the namespace, so a pod
    /// created right after its namespace waits for it a little (upstream looks it up
    /// [`DEFAULT_ACCOUNT_ATTEMPTS`] times, 100–200 ms apart, before refusing the pod).
    async fn service_account(
        &self,
        ns: &str,
        name: &str,
    ) -> Option<std::sync::Arc<crate::storage::store::StoredObject>> {
        let key = format!("{ns}/{name}");
        let attempts = if name == "default" {
            DEFAULT_ACCOUNT_ATTEMPTS
        } else {
            1
        };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(DEFAULT_ACCOUNT_RETRY).await;
            }
            if let Some(found) = self.store.get("/serviceaccounts", &key) {
                return Some(found);
            }
        }
        None
    }
}

/// How many times the `default` account is looked up before a pod is refused.
const DEFAULT_ACCOUNT_ATTEMPTS: u32 = 10;
/// The wait between two lookups (upstream: a random 100–200 ms).
const DEFAULT_ACCOUNT_RETRY: std::time::Duration = std::time::Duration::from_millis(150);

/// A pod without image pull secrets gets its service account's (upstream copies them
/// when the pod names none).
fn copy_pull_secrets(account: &Value, spec: &mut serde_json::Map<String, Value>) {
    let has_own = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    if has_own {
        return;
    }
    if let Some(secrets) = account
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
    {
        spec.insert("imagePullSecrets".into(), Value::Array(secrets.clone()));
    }
}

/// Whether `container` already mounts something at the credentials' path.
fn mounts_credentials(container: &Value) -> bool {
    container
        .get("volumeMounts")
        .and_then(Value::as_array)
        .is_some_and(|ms| {
            ms.iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
        })
}

/// Add the projected volume and a mount of it to every container and init container
/// that does not mount the credentials' path already (upstream `mountServiceAccountToken`).
fn mount_token(spec: &mut serde_json::Map<String, Value>) {
    let needs = ["initContainers", "containers"].iter().any(|k| {
        spec.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| !mounts_credentials(c)))
    });
    if !needs {
        return;
    }
    let volume_name = crate::registry::rest::generate_name("kube-api-access-");
    for key in ["initContainers", "containers"] {
        let Some(cs) = spec.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in cs.iter_mut() {
            if mounts_credentials(c) {
                continue;
            }
            let Some(c) = c.as_object_mut() else {
                continue;
            };
            let mount = json!({"name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH});
            match c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
                Some(ms) => ms.push(mount),
                None => {
                    c.insert("volumeMounts".into(), json!([mount]));
                }
            }
        }
    }
    let volume = json!({
        "name": volume_name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ],
            "defaultMode": 420
        }
    });
    match spec.get_mut("volumes").and_then(Value::as_array_mut) {
        Some(vs) => vs.push(volume),
        None => {
            spec.insert("volumes".into(), json!([volume]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_container_mounts_one_projected_volume() {
        let mut s = spec(json!({
            "initContainers": [{"name": "i"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}],
            "volumes": [{"name": "x", "emptyDir": {}}]
        }));
        mount_token(&mut s);
        let vols = s["volumes"].as_array().unwrap();
        assert_eq!(vols.len(), 2);
        let name = vols[1]["name"].as_str().unwrap().to_string();
        assert!(
            name.starts_with("kube-api-access-") && name.len() == 21,
            "{name}"
        );
        assert_eq!(
            vols[1]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3607
        );
        for (k, i) in [("initContainers", 0), ("containers", 0), ("containers", 1)] {
            let ms = s[k][i]["volumeMounts"].as_array().unwrap();
            let last = ms.last().unwrap();
            assert_eq!(last["name"], json!(name));
            assert_eq!(last["mountPath"], MOUNT_PATH);
            assert_eq!(last["readOnly"], true);
        }
    }

    #[test]
    fn pull_secrets_come_from_the_account_when_the_pod_names_none() {
        let account = json!({"imagePullSecrets": [{"name": "registry"}]});
        for (pod, want) in [
            (json!({}), json!([{"name": "registry"}])),
            (
                json!({"imagePullSecrets": []}),
                json!([{"name": "registry"}]),
            ),
            (
                json!({"imagePullSecrets": [{"name": "own"}]}),
                json!([{"name": "own"}]),
            ),
        ] {
            let mut s = spec(pod);
            copy_pull_secrets(&account, &mut s);
            assert_eq!(s["imagePullSecrets"], want);
        }
        // an account without any adds nothing
        let mut s = spec(json!({}));
        copy_pull_secrets(&json!({"imagePullSecrets": []}), &mut s);
        copy_pull_secrets(&json!({}), &mut s);
        assert!(!s.contains_key("imagePullSecrets"));
    }

    #[test]
    fn containers_that_mount_the_path_already_are_left_alone() {
        let mut s = spec(json!({
            "containers": [{"name": "a", "volumeMounts": [{"name": "own", "mountPath": MOUNT_PATH}]}],
            "volumes": [{"name": "own", "secret": {"secretName": "s"}}]
        }));
        let before = s.clone();
        mount_token(&mut s);
        assert_eq!(s, before);
    }
}
