//! Reading and writing a controller's revisions (upstream `realHistory`).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::client::{Client, ListOptions};
use coxswain_runtime::controllerutil::get_controller_of;
use coxswain_runtime::object::ObjectKey;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

use super::{controller_revision_name, hash_controller_revision, revision_data_bytes};
use crate::controller_utils::ref_manager::{adopt_patch, release_patch, ControllerIdentity};

/// Why a history operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The API server refused the request or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The revision to adopt already has a controller (upstream's message).
    #[error("attempt to adopt revision owned by {0}")]
    OwnedByOther(String),
}

impl HistoryError {
    /// Whether the API server answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, HistoryError::Api(kube::Error::Api(s)) if s.code == 404)
    }
}

/// client-go `retry.DefaultBackoff`: 4 attempts, 10 ms growing five-fold.
const UPDATE_ATTEMPTS: usize = 4;
const UPDATE_FIRST_DELAY: Duration = Duration::from_millis(10);

/// A controller's ControllerRevisions: cached reads, writes to the API server.
#[derive(Clone)]
pub struct History {
    client: Client,
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict")
}

fn is_already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

impl History {
    /// History over `client` (its cache serves the listings).
    pub fn new(client: Client) -> Self {
        History { client }
    }

    fn api(&self, namespace: &str) -> Api<ControllerRevision> {
        Api::namespaced(self.client.kube_client().clone(), namespace)
    }

    /// The revisions of `parent` in its namespace: those matching `selector` that are
    /// controlled by `parent` (by UID) or by nothing (upstream `ListControllerRevisions`;
    /// orphans are included so that the caller can adopt them).
    pub async fn list_controller_revisions(
        &self,
        parent: &ObjectMeta,
        selector: &LabelSelector,
    ) -> Result<Vec<Arc<ControllerRevision>>, HistoryError> {
        let uid = parent.uid.as_deref().unwrap_or("");
        let all = self
            .client
            .list::<ControllerRevision>(&ListOptions {
                namespace: parent.namespace.clone(),
                labels: Some(selector.clone()),
                index: None,
            })
            .await?;
        Ok(all
            .into_iter()
            .filter(|r| get_controller_of(&r.metadata).is_none_or(|c| c.uid == uid))
            .collect())
    }

    /// Create `revision` for `parent` (upstream `CreateControllerRevision`): named
    /// `<parent>-<hash>` with the hash of its data and `*collision_count`. When that
    /// name is taken by a revision with the same data, that revision is returned; when
    /// it is taken by other data, `*collision_count` is incremented and the next name
    /// tried. The hash label keeps its value from before any collision, as upstream.
    pub async fn create_controller_revision(
        &self,
        parent: &ObjectMeta,
        revision: &ControllerRevision,
        collision_count: &mut i32,
    ) -> Result<ControllerRevision, HistoryError> {
        let namespace = parent.namespace.clone().unwrap_or_default();
        let parent_name = parent.name.as_deref().unwrap_or("");
        let api = self.api(&namespace);
        let mut clone = revision.clone();
        clone.metadata.namespace = Some(namespace.clone());
        loop {
            let hash = hash_controller_revision(revision, Some(*collision_count));
            let name = controller_revision_name(parent_name, &hash);
            clone.metadata.name = Some(name.clone());
            match api.create(&PostParams::default(), &clone).await {
                Ok(created) => return Ok(created),
                Err(e) if is_already_exists(&e) => {
                    let existing = api.get(&name).await?;
                    if revision_data_bytes(&existing) == revision_data_bytes(&clone) {
                        return Ok(existing);
                    }
                    *collision_count = collision_count.saturating_add(1);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Give `revision` the number `new_revision` (upstream `UpdateControllerRevision`):
    /// nothing is sent when it has that number already; a conflict re-reads the
    /// revision from the cache and tries again (client-go `retry.DefaultBackoff`).
    pub async fn update_controller_revision(
        &self,
        revision: &ControllerRevision,
        new_revision: i64,
    ) -> Result<ControllerRevision, HistoryError> {
        let mut clone = revision.clone();
        let mut delay = UPDATE_FIRST_DELAY;
        let mut attempt = 0;
        loop {
            if clone.revision == Some(new_revision) {
                return Ok(clone);
            }
            clone.revision = Some(new_revision);
            match self.client.update(&clone).await {
                Ok(updated) => return Ok(updated),
                Err(e) => {
                    attempt += 1;
                    if !is_conflict(&e) || attempt >= UPDATE_ATTEMPTS {
                        return Err(e.into());
                    }
                    let key = ObjectKey::of(&clone);
                    match self.client.get::<ControllerRevision>(&key).await? {
                        Some(fresh) => clone = (*fresh).clone(),
                        None => return Err(e.into()),
                    }
                    tokio::time::sleep(delay).await;
                    delay *= 5;
                }
            }
        }
    }

    /// Delete `revision` (upstream `DeleteControllerRevision`; a revision that is gone
    /// is an error).
    pub async fn delete_controller_revision(
        &self,
        revision: &ControllerRevision,
    ) -> Result<(), HistoryError> {
        let namespace = revision.metadata.namespace.as_deref().unwrap_or("");
        let name = revision.metadata.name.as_deref().unwrap_or("");
        self.api(namespace)
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Make `parent` the controller of the orphan `revision` (upstream
    /// `AdoptControllerRevision`): a strategic merge patch adding the controller
    /// reference, with the revision's UID as precondition.
    pub async fn adopt_controller_revision(
        &self,
        parent: &ControllerIdentity,
        revision: &ControllerRevision,
    ) -> Result<ControllerRevision, HistoryError> {
        if let Some(owner) = get_controller_of(&revision.metadata) {
            return Err(HistoryError::OwnedByOther(format!(
                "{}/{} {} ({})",
                owner.api_version, owner.kind, owner.name, owner.uid
            )));
        }
        let uid = revision.metadata.uid.as_deref().unwrap_or("");
        let patch = adopt_patch(parent, uid);
        Ok(self.patch(revision, &patch).await?)
    }

    /// Remove `parent`'s owner reference from `revision` (upstream
    /// `ReleaseControllerRevision`); a revision that is gone or changed meanwhile
    /// (404, 422) is no error and gives `None`.
    pub async fn release_controller_revision(
        &self,
        parent: &ObjectMeta,
        revision: &ControllerRevision,
    ) -> Result<Option<ControllerRevision>, HistoryError> {
        let uid = revision.metadata.uid.as_deref().unwrap_or("");
        let patch = release_patch(parent.uid.as_deref().unwrap_or(""), uid);
        match self.patch(revision, &patch).await {
            Ok(r) => Ok(Some(r)),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 422 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn patch(
        &self,
        revision: &ControllerRevision,
        patch: &serde_json::Value,
    ) -> Result<ControllerRevision, kube::Error> {
        let key = ObjectKey::of(revision);
        self.client
            .patch::<ControllerRevision, _>(&key, &PatchParams::default(), &Patch::Strategic(patch))
            .await
    }
}
