//! The finalizer protocol in one call (kube-rs's `finalizer`): clean up before an object
//! goes.
//!
//! A controller that must act before its object is deleted (release something outside
//! the cluster, say) keeps a finalizer on it. [`finalizer`] does the bookkeeping around
//! the reconcile:
//!
//! | finalizer present | being deleted | what happens |
//! |---|---|---|
//! | no | no | the finalizer is added (the reconcile runs on the change that follows) |
//! | yes | no | [`Event::Apply`]: the ordinary reconcile |
//! | yes | yes | [`Event::Cleanup`]; once it succeeds the finalizer is removed and the API server finishes the deletion; if it fails the finalizer stays and the reconcile is retried |
//! | no | yes | nothing: cleanup already done, or never needed |
//!
//! Both patches are JSON patches guarded by `test` operations, so the finalizer is never
//! added twice nor someone else's removed when the list changed since it was read: the
//! patch fails (422), the reconcile is retried with the fresh object. The cleanup must
//! therefore be idempotent, and must work on objects the ordinary reconcile never saw
//! (deleted while the controller was down).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use coxswain_runtime::client::Client;
//! # use coxswain_runtime::controller::{Action, ReconcileResult};
//! # use coxswain_runtime::finalizer::{finalizer, Event};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # async fn demo(client: Client, cm: Arc<ConfigMap>) -> ReconcileResult {
//! finalizer(&client, "example.com/cleanup", cm, |event| async move {
//!     match event {
//!         Event::Apply(_cm) => Ok(Action::Done),   // create or update what it needs
//!         Event::Cleanup(_cm) => Ok(Action::Done), // release it
//!     }
//! })
//! .await
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;

use json_patch::{AddOperation, PatchOperation, RemoveOperation, TestOperation};
use serde_json::Value;

use crate::cache::CachedKind;
use crate::client::Client;
use crate::controller::{Action, ReconcileError, ReconcileResult};
use crate::object::ObjectKey;

/// What the reconcile passed to [`finalizer`] is asked to do.
#[derive(Debug)]
pub enum Event<K> {
    /// The object lives (and carries the finalizer): reconcile it.
    Apply(Arc<K>),
    /// The object is being deleted: release what it holds. The finalizer is removed once
    /// this succeeds.
    Cleanup(Arc<K>),
}

fn pointer(path: &str) -> json_patch::jsonptr::PointerBuf {
    json_patch::jsonptr::PointerBuf::parse(path).unwrap_or_default()
}

/// Run `reconcile` under the finalizer `name` (a qualified name such as
/// `example.com/cleanup`) of `obj`: see the module documentation for the table.
pub async fn finalizer<K, F, Fut>(
    client: &Client,
    name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> ReconcileResult
where
    K: CachedKind,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = ReconcileResult>,
{
    let meta = obj.meta();
    let index = meta.finalizers.iter().flatten().position(|f| f == name);
    let deleting = meta.deletion_timestamp.is_some();
    if meta.name.as_deref().is_none_or(str::is_empty) {
        return Err(ReconcileError::terminal("object has no name"));
    }
    let key = ObjectKey::of(obj.as_ref());
    match (index, deleting) {
        (Some(_), false) => reconcile(Event::Apply(obj))
            .await
            .map_err(|e| e.context("failed to apply object")),
        (Some(i), true) => {
            let action = reconcile(Event::Cleanup(obj))
                .await
                .map_err(|e| e.context("failed to clean up object"))?;
            let path = format!("/metadata/finalizers/{i}");
            let patch = json_patch::Patch(vec![
                PatchOperation::Test(TestOperation {
                    path: pointer(&path),
                    value: Value::String(name.to_string()),
                }),
                PatchOperation::Remove(RemoveOperation {
                    path: pointer(&path),
                }),
            ]);
            match client.patch_json::<K>(&key, &patch).await {
                Ok(_) => Ok(action),
                // already gone: the finalizer went with it
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(action),
                Err(e) => Err(ReconcileError::from(e).context("failed to remove finalizer")),
            }
        }
        (None, false) => {
            let patch = match meta.finalizers.as_deref() {
                None | Some([]) => json_patch::Patch(vec![
                    PatchOperation::Test(TestOperation {
                        path: pointer("/metadata/finalizers"),
                        value: Value::Null,
                    }),
                    PatchOperation::Add(AddOperation {
                        path: pointer("/metadata/finalizers"),
                        value: serde_json::json!([name]),
                    }),
                ]),
                Some(list) => json_patch::Patch(vec![
                    PatchOperation::Test(TestOperation {
                        path: pointer("/metadata/finalizers"),
                        value: serde_json::json!(list),
                    }),
                    PatchOperation::Add(AddOperation {
                        path: pointer("/metadata/finalizers/-"),
                        value: Value::String(name.to_string()),
                    }),
                ]),
            };
            client
                .patch_json::<K>(&key, &patch)
                .await
                .map_err(|e| ReconcileError::from(e).context("failed to add finalizer"))?;
            // the change of our own patch brings the object back
            Ok(Action::Done)
        }
        (None, true) => Ok(Action::Done),
    }
}
