//! Create-or-update, create-or-patch and server-side apply (controller-runtime's
//! `controllerutil.CreateOrUpdate`/`CreateOrPatch` and `client.Apply`).

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::Value;

use super::{request_for, Client, Error};
use crate::cache::CachedKind;
use crate::controllerutil::OperationResult;
use crate::manager::BoxError;
use crate::object::ObjectKey;
use apimachinery::mergepatch;

/// Why [`Client::create_or_update`] or [`Client::create_or_patch`] failed.
#[derive(Debug, thiserror::Error)]
pub enum UpsertError {
    /// A read or write failed (a 409 Conflict when the cached copy was stale: requeue).
    #[error(transparent)]
    Api(#[from] Error),
    /// The mutate closure failed; nothing was written.
    #[error("{0}")]
    Mutate(BoxError),
    /// The mutate closure renamed the object or moved it to another namespace.
    #[error("MutateFn cannot mutate object name and/or object namespace")]
    KeyChanged,
    /// The object was patched (`done` says how) but the status patch that followed failed.
    #[error("{done} but the status patch failed: {source}")]
    Partial {
        /// What was written before the failure.
        done: OperationResult,
        /// The status patch's error.
        source: Error,
    },
}

/// Server-side apply options: who applies (required) and whether conflicts with other
/// managers are overridden.
#[derive(Clone, Debug, Default)]
pub struct ApplyOptions {
    /// The field manager that owns what the applied object sets. When empty, the
    /// client's field owner ([`Client::with_field_owner`]) is used.
    pub field_manager: String,
    /// Take ownership of fields other managers own instead of failing with 409.
    pub force: bool,
    /// Validate and answer without persisting (`dryRun=All`).
    pub dry_run: bool,
}

impl ApplyOptions {
    /// Apply as `manager`, taking over conflicting fields (what controllers do).
    pub fn force(manager: impl Into<String>) -> Self {
        ApplyOptions {
            field_manager: manager.into(),
            force: true,
            dry_run: false,
        }
    }
}

fn to_json<K: serde::Serialize>(obj: &K) -> Result<Value, Error> {
    serde_json::to_value(obj).map_err(Error::SerdeError)
}

fn mutate_checked<K: CachedKind>(
    obj: &mut K,
    key: &ObjectKey,
    mutate: impl FnOnce(&mut K) -> Result<(), BoxError>,
) -> Result<(), UpsertError> {
    mutate(obj).map_err(UpsertError::Mutate)?;
    if ObjectKey::of(obj) != *key {
        return Err(UpsertError::KeyChanged);
    }
    Ok(())
}

/// `obj` as JSON, its `status` taken out.
fn split_status(obj: Value) -> (Value, Option<Value>) {
    match obj {
        Value::Object(mut m) => {
            let status = m.remove("status");
            (Value::Object(m), status)
        }
        other => (other, None),
    }
}

impl Client {
    /// Make sure the object `obj` names exists as `mutate` wants it: read it (from the
    /// cache), let `mutate` change it, and write it back only when that changed something
    /// ([`OperationResult::Updated`], an optimistic-concurrency update), or create it from
    /// `obj` changed by `mutate` when it does not exist ([`OperationResult::Created`]).
    /// `mutate` must set every field it cares about, on both paths, and must not rename
    /// the object. A stale cache gives a 409 Conflict: requeue and try again.
    ///
    /// ```no_run
    /// # use coxswain_runtime::client::Client;
    /// # use coxswain_runtime::controllerutil::set_controller_reference;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # async fn demo(client: Client, cm: ConfigMap) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut secret = Secret::default();
    /// secret.metadata.name = cm.metadata.name.clone();
    /// secret.metadata.namespace = cm.metadata.namespace.clone();
    /// let (result, _) = client
    ///     .create_or_update(secret, |s| {
    ///         set_controller_reference(&cm, s)?;
    ///         s.string_data = cm.data.clone();
    ///         Ok(())
    ///     })
    ///     .await?;
    /// println!("secret {result}");
    /// # Ok(()) }
    /// ```
    pub async fn create_or_update<K: CachedKind>(
        &self,
        obj: K,
        mutate: impl FnOnce(&mut K) -> Result<(), BoxError>,
    ) -> Result<(OperationResult, K), UpsertError> {
        let key = ObjectKey::of(&obj);
        match self.get::<K>(&key).await? {
            None => {
                let mut obj = obj;
                mutate_checked(&mut obj, &key, mutate)?;
                let created = self.create(&obj).await?;
                Ok((OperationResult::Created, created))
            }
            Some(existing) => {
                let mut obj = (*existing).clone();
                mutate_checked(&mut obj, &key, mutate)?;
                if mergepatch::semantic_eq(&to_json(existing.as_ref())?, &to_json(&obj)?) {
                    return Ok((OperationResult::Unchanged, obj));
                }
                let updated = self.update(&obj).await?;
                Ok((OperationResult::Updated, updated))
            }
        }
    }

    /// As [`Client::create_or_update`], but an existing object is changed with merge
    /// patches rather than an update: one for what `mutate` changed outside `status`,
    /// then one on the `/status` subresource for what it changed in `status`
    /// ([`OperationResult::Updated`], [`OperationResult::UpdatedStatus`] or
    /// [`OperationResult::UpdatedStatusOnly`]). Patches carry no resourceVersion, so a
    /// stale cache does not conflict; lists are replaced whole. On creation the status
    /// `mutate` set is not written (the API server ignores it): reconcile again.
    pub async fn create_or_patch<K: CachedKind>(
        &self,
        obj: K,
        mutate: impl FnOnce(&mut K) -> Result<(), BoxError>,
    ) -> Result<(OperationResult, K), UpsertError> {
        let key = ObjectKey::of(&obj);
        let Some(existing) = self.get::<K>(&key).await? else {
            let mut obj = obj;
            mutate_checked(&mut obj, &key, mutate)?;
            let created = self.create(&obj).await?;
            return Ok((OperationResult::Created, created));
        };
        let mut obj = (*existing).clone();
        mutate_checked(&mut obj, &key, mutate)?;
        let (before, before_status) = split_status(to_json(existing.as_ref())?);
        let (after, after_status) = split_status(to_json(&obj)?);
        let mut result = OperationResult::Unchanged;
        let mut current = obj;
        if !mergepatch::semantic_eq(&before, &after) {
            let patch = mergepatch::diff(&before, &after);
            current = self
                .patch::<K, _>(&key, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            result = OperationResult::Updated;
        }
        let status_changed = match (&before_status, &after_status) {
            (None, None) => false,
            (a, b) => !mergepatch::semantic_eq(
                a.as_ref().unwrap_or(&Value::Null),
                b.as_ref().unwrap_or(&Value::Null),
            ),
        };
        if status_changed {
            let patch = serde_json::json!({
                "status": mergepatch::diff(
                    before_status.as_ref().unwrap_or(&Value::Null),
                    after_status.as_ref().unwrap_or(&Value::Null),
                )
            });
            let patched = self
                .patch_status::<K, _>(&key, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            current = match patched {
                Ok(o) => o,
                Err(source) if result == OperationResult::Updated => {
                    return Err(UpsertError::Partial {
                        done: result,
                        source,
                    })
                }
                Err(e) => return Err(e.into()),
            };
            result = if result == OperationResult::Updated {
                OperationResult::UpdatedStatus
            } else {
                OperationResult::UpdatedStatusOnly
            };
        }
        Ok((result, current))
    }

    fn apply_params(&self, options: &ApplyOptions) -> PatchParams {
        let manager = if options.field_manager.is_empty() {
            self.field_owner.as_deref().map(str::to_string)
        } else {
            Some(options.field_manager.clone())
        };
        PatchParams {
            dry_run: options.dry_run,
            force: options.force,
            field_manager: manager,
            field_validation: None,
        }
    }

    /// Server-side apply `obj` (`PATCH` with `application/apply-patch+yaml`): the fields
    /// it sets become owned by the field manager; fields it leaves out that the manager
    /// owned before are removed. Build `obj` with only the fields you mean to own.
    pub async fn apply<K: CachedKind>(&self, obj: &K, options: &ApplyOptions) -> Result<K, Error> {
        let key = ObjectKey::of(obj);
        let value = to_json(obj)?;
        self.send(request_for::<K>(key.namespace()).patch(
            key.name(),
            &self.apply_params(options),
            &Patch::Apply(&value),
        ))
        .await
    }

    /// Server-side apply `obj`'s status through the `/status` subresource.
    pub async fn apply_status<K: CachedKind>(
        &self,
        obj: &K,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let key = ObjectKey::of(obj);
        let value = to_json(obj)?;
        self.send(request_for::<K>(key.namespace()).patch_subresource(
            "status",
            key.name(),
            &self.apply_params(options),
            &Patch::Apply(&value),
        ))
        .await
    }

    /// Post parameters carrying the client's field owner.
    pub(super) fn post_params(&self) -> PostParams {
        PostParams {
            dry_run: false,
            field_manager: self.field_owner.as_deref().map(str::to_string),
        }
    }
}
