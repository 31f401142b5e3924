//! Owner references and finalizers: the helpers every controller needs
//! (controller-runtime's `controllerutil`, apimachinery's `metav1.GetControllerOf`).
//!
//! These change the object in memory only; write it back with the [`crate::client::Client`]
//! (or use [`crate::client::Client::create_or_update`], whose mutate closure is the usual
//! place to call them, and [`crate::finalizer::finalizer`] for the whole finalizer
//! protocol).
//!
//! Owner identity follows upstream: two references name the same owner when their API
//! *group*, kind and name agree (the version and the uid are not compared), so a
//! reference written for `apps/v1beta2` is updated in place, not duplicated, by one for
//! `apps/v1`.
//!
//! ```
//! use coxswain_runtime::controllerutil::{self, set_controller_reference};
//! use k8s_openapi::api::core::v1::{ConfigMap, Secret};
//!
//! let mut owner = ConfigMap::default();
//! owner.metadata.name = Some("web".into());
//! owner.metadata.namespace = Some("default".into());
//! owner.metadata.uid = Some("1f0c".into());
//! let mut secret = Secret::default();
//! secret.metadata.namespace = Some("default".into());
//! set_controller_reference(&owner, &mut secret).unwrap();
//! assert!(controllerutil::is_controlled_by(&secret, &owner));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

/// Why an owner reference could not be set or removed (upstream's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OwnerRefError {
    /// A namespaced owner cannot own a cluster-scoped object.
    #[error("cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}")]
    ClusterScopedObject {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// Owner and object live in different namespaces.
    #[error("cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {object_namespace}")]
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The object's namespace.
        object_namespace: String,
    },
    /// Another object already controls this one (upstream `AlreadyOwnedError`).
    #[error("Object {namespace}/{name} is already owned by another {owner_kind} controller {owner_name}")]
    AlreadyOwned {
        /// The object's namespace (empty when cluster-scoped).
        namespace: String,
        /// The object's name.
        name: String,
        /// The kind of its current controller.
        owner_kind: String,
        /// The name of its current controller.
        owner_name: String,
    },
    /// The owner was never read from the server: without a uid the reference is invalid.
    #[error("{kind} {name:?} has no uid: read it from the server before it owns objects")]
    OwnerWithoutUid {
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
    /// Nothing to remove.
    #[error("{kind} does not have any owner references")]
    NoOwnerReferences {
        /// The object's kind.
        kind: String,
    },
    /// No reference to this owner.
    #[error("{kind} does not have an owner reference for {owner_kind}")]
    NotOwned {
        /// The object's kind.
        kind: String,
        /// The owner's kind.
        owner_kind: String,
    },
    /// No controller reference at all.
    #[error("{kind} does not have a owner reference with controller equals true")]
    NoControllerReference {
        /// The object's kind.
        kind: String,
    },
    /// The reference to this owner is not the controller reference.
    #[error("{owner_kind} owner is not the controller reference for {kind}")]
    NotController {
        /// The object's kind.
        kind: String,
        /// The owner's kind.
        owner_kind: String,
    },
}

/// Changes to a reference before it is set (upstream `OwnerReferenceOption`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerRefOption {
    /// Set `blockOwnerDeletion` to this value (present even when false).
    BlockOwnerDeletion(bool),
}

fn apply_options(r: &mut OwnerReference, opts: &[OwnerRefOption]) {
    for o in opts {
        match o {
            OwnerRefOption::BlockOwnerDeletion(b) => r.block_owner_deletion = Some(*b),
        }
    }
}

/// The group of an `apiVersion` as upstream `schema.ParseGroupVersion` reads it (`v1` is
/// the core group); `None` when it does not parse (two or more `/`).
fn group_of(api_version: &str) -> Option<String> {
    crate::discovery::parse_group_version(api_version)
        .ok()
        .map(|(group, _)| group)
}

/// Whether two references name the same owner: same API group, kind and name (upstream
/// `referSameObject`); a reference whose `apiVersion` does not parse names nothing.
pub fn refer_same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    match (group_of(&a.api_version), group_of(&b.api_version)) {
        (Some(ga), Some(gb)) => ga == gb && a.kind == b.kind && a.name == b.name,
        _ => false,
    }
}

/// The controlling owner reference of an object, if any (upstream `metav1.GetControllerOf`:
/// the first reference with `controller: true`).
pub fn get_controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// Whether `object` is controlled by `owner`: its controller reference carries the owner's
/// uid (upstream `metav1.IsControlledBy`).
pub fn is_controlled_by(object: &impl Resource, owner: &impl Resource) -> bool {
    match (
        get_controller_of(object.meta()),
        owner.meta().uid.as_deref(),
    ) {
        (Some(r), Some(uid)) => r.uid == uid,
        _ => false,
    }
}

/// Whether `object` has a controller reference.
pub fn has_controller_reference(object: &impl Resource) -> bool {
    get_controller_of(object.meta()).is_some()
}

/// A reference to `owner` (apiVersion, kind, name, uid; `controller` and
/// `blockOwnerDeletion` unset).
pub fn owner_reference<O: Resource<DynamicType = ()>>(
    owner: &O,
) -> Result<OwnerReference, OwnerRefError> {
    let meta = owner.meta();
    let name = meta.name.clone().unwrap_or_default();
    let uid = match meta.uid.as_deref() {
        Some(uid) if !uid.is_empty() => uid.to_string(),
        _ => {
            return Err(OwnerRefError::OwnerWithoutUid {
                kind: O::kind(&()).into_owned(),
                name,
            })
        }
    };
    Ok(OwnerReference {
        api_version: O::api_version(&()).into_owned(),
        kind: O::kind(&()).into_owned(),
        name,
        uid,
        controller: None,
        block_owner_deletion: None,
    })
}

/// The controller reference a controller puts on the objects it creates: apiVersion,
/// kind, name and uid of `owner`, `controller` and `blockOwnerDeletion` true (upstream
/// `metav1.NewControllerRef`; see [`controller_reference`] for the checked form).
pub fn new_controller_ref<O: Resource<DynamicType = ()>>(owner: &O) -> OwnerReference {
    let meta = owner.meta();
    OwnerReference {
        api_version: O::api_version(&()).into_owned(),
        kind: O::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A controller reference to `owner`: as [`owner_reference`] with `controller` and
/// `blockOwnerDeletion` true (what a controller puts on the objects it creates).
pub fn controller_reference<O: Resource<DynamicType = ()>>(
    owner: &O,
) -> Result<OwnerReference, OwnerRefError> {
    let mut r = owner_reference(owner)?;
    r.controller = Some(true);
    r.block_owner_deletion = Some(true);
    Ok(r)
}

/// Upstream `validateOwner`: a namespaced owner only owns objects of its own namespace.
fn validate_owner(owner: &ObjectMeta, object: &ObjectMeta) -> Result<(), OwnerRefError> {
    let owner_ns = owner.namespace.as_deref().unwrap_or_default();
    if owner_ns.is_empty() {
        return Ok(());
    }
    let object_ns = object.namespace.as_deref().unwrap_or_default();
    if object_ns.is_empty() {
        return Err(OwnerRefError::ClusterScopedObject {
            owner_namespace: owner_ns.to_string(),
        });
    }
    if owner_ns != object_ns {
        return Err(OwnerRefError::CrossNamespace {
            owner_namespace: owner_ns.to_string(),
            object_namespace: object_ns.to_string(),
        });
    }
    Ok(())
}

/// Replace the reference to the same owner in place, or append `r`.
fn upsert(meta: &mut ObjectMeta, r: OwnerReference) {
    let refs = meta.owner_references.get_or_insert_with(Vec::new);
    match refs.iter_mut().find(|e| refer_same_object(e, &r)) {
        Some(existing) => *existing = r,
        None => refs.push(r),
    }
}

/// Put `reference` on `object` as its controller reference, unless another owner already
/// controls it ([`OwnerRefError::AlreadyOwned`], the object unchanged). For owners known
/// only at run time; typed owners use [`set_controller_reference`].
pub fn upsert_controller_reference(
    object: &mut impl Resource,
    reference: OwnerReference,
) -> Result<(), OwnerRefError> {
    let meta = object.meta_mut();
    if let Some(existing) = get_controller_of(meta) {
        if !refer_same_object(existing, &reference) {
            return Err(OwnerRefError::AlreadyOwned {
                namespace: meta.namespace.clone().unwrap_or_default(),
                name: meta.name.clone().unwrap_or_default(),
                owner_kind: existing.kind.clone(),
                owner_name: existing.name.clone(),
            });
        }
    }
    upsert(meta, reference);
    Ok(())
}

/// Make `owner` the controller of `object` (upstream `SetControllerReference`): a
/// reference with `controller` and `blockOwnerDeletion` true, replacing any reference to
/// the same owner. Fails when the namespaces do not allow it or another owner already
/// controls the object.
pub fn set_controller_reference<O: Resource<DynamicType = ()>>(
    owner: &O,
    object: &mut impl Resource,
) -> Result<(), OwnerRefError> {
    set_controller_reference_with(owner, object, &[])
}

/// [`set_controller_reference`] with options applied to the reference first.
pub fn set_controller_reference_with<O: Resource<DynamicType = ()>>(
    owner: &O,
    object: &mut impl Resource,
    opts: &[OwnerRefOption],
) -> Result<(), OwnerRefError> {
    validate_owner(owner.meta(), object.meta())?;
    let mut r = controller_reference(owner)?;
    apply_options(&mut r, opts);
    upsert_controller_reference(object, r)
}

/// Add a (non-controller) reference to `owner` to `object`, replacing any reference to
/// the same owner (upstream `SetOwnerReference`; replacing a controller reference drops
/// its `controller` flag, as upstream).
pub fn set_owner_reference<O: Resource<DynamicType = ()>>(
    owner: &O,
    object: &mut impl Resource,
) -> Result<(), OwnerRefError> {
    set_owner_reference_with(owner, object, &[])
}

/// [`set_owner_reference`] with options applied to the reference first.
pub fn set_owner_reference_with<O: Resource<DynamicType = ()>>(
    owner: &O,
    object: &mut impl Resource,
    opts: &[OwnerRefOption],
) -> Result<(), OwnerRefError> {
    validate_owner(owner.meta(), object.meta())?;
    let mut r = owner_reference(owner)?;
    apply_options(&mut r, opts);
    upsert(object.meta_mut(), r);
    Ok(())
}

fn kind_of<K: Resource>(object: &K) -> String
where
    K::DynamicType: Default,
{
    let _ = object;
    K::kind(&Default::default()).into_owned()
}

/// The index of the reference to `owner` in `object`'s references, by group, kind and
/// name.
fn position<O: Resource<DynamicType = ()>>(meta: &ObjectMeta, owner: &O) -> Option<usize> {
    let probe = OwnerReference {
        api_version: O::api_version(&()).into_owned(),
        kind: O::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        ..OwnerReference::default()
    };
    meta.owner_references
        .as_ref()?
        .iter()
        .position(|r| refer_same_object(r, &probe))
}

fn remove_at(meta: &mut ObjectMeta, i: usize) {
    if let Some(refs) = meta.owner_references.as_mut() {
        refs.remove(i);
    }
}

/// Remove the reference to `owner` from `object`, controller or not (upstream
/// `RemoveOwnerReference`).
pub fn remove_owner_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerRefError>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
    K::DynamicType: Default,
{
    if object
        .meta()
        .owner_references
        .as_ref()
        .is_none_or(Vec::is_empty)
    {
        return Err(OwnerRefError::NoOwnerReferences {
            kind: kind_of(object),
        });
    }
    let Some(i) = position(object.meta(), owner) else {
        return Err(OwnerRefError::NotOwned {
            kind: kind_of(object),
            owner_kind: O::kind(&()).into_owned(),
        });
    };
    remove_at(object.meta_mut(), i);
    Ok(())
}

/// Remove `owner`'s reference from `object` when it is the controller reference (upstream
/// `RemoveControllerReference`).
pub fn remove_controller_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerRefError>
where
    O: Resource<DynamicType = ()>,
    K: Resource,
    K::DynamicType: Default,
{
    if !has_controller_reference(object) {
        return Err(OwnerRefError::NoControllerReference {
            kind: kind_of(object),
        });
    }
    let Some(i) = position(object.meta(), owner) else {
        return Err(OwnerRefError::NotOwned {
            kind: kind_of(object),
            owner_kind: O::kind(&()).into_owned(),
        });
    };
    let is_controller = object
        .meta()
        .owner_references
        .as_ref()
        .and_then(|refs| refs.get(i))
        .is_some_and(|r| r.controller == Some(true));
    if !is_controller {
        return Err(OwnerRefError::NotController {
            kind: kind_of(object),
            owner_kind: O::kind(&()).into_owned(),
        });
    }
    remove_at(object.meta_mut(), i);
    Ok(())
}

/// Whether `refs` holds a reference to `owner` (by group, kind and name; upstream
/// `HasOwnerReference`).
pub fn has_owner_reference<O: Resource<DynamicType = ()>>(
    refs: &[OwnerReference],
    owner: &O,
) -> bool {
    let probe = OwnerReference {
        api_version: O::api_version(&()).into_owned(),
        kind: O::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        ..OwnerReference::default()
    };
    refs.iter().any(|r| refer_same_object(r, &probe))
}

/// Whether `object` lists `finalizer`.
pub fn contains_finalizer(object: &impl Resource, finalizer: &str) -> bool {
    object
        .meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// Append `finalizer` unless present; whether the list changed.
pub fn add_finalizer(object: &mut impl Resource, finalizer: &str) -> bool {
    if contains_finalizer(object, finalizer) {
        return false;
    }
    object
        .meta_mut()
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_string());
    true
}

/// Remove every copy of `finalizer`, keeping the others in order; whether the list
/// changed.
pub fn remove_finalizer(object: &mut impl Resource, finalizer: &str) -> bool {
    let Some(list) = object.meta_mut().finalizers.as_mut() else {
        return false;
    };
    let before = list.len();
    list.retain(|f| f != finalizer);
    list.len() != before
}

/// What [`crate::client::Client::create_or_update`] and
/// [`crate::client::Client::create_or_patch`] did (upstream `OperationResult`; the
/// strings are upstream's, as logs show them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// Nothing: the object already was as wanted.
    Unchanged,
    /// The object did not exist and was created.
    Created,
    /// The object was updated (patched).
    Updated,
    /// The object and its status were patched.
    UpdatedStatus,
    /// Only the status was patched.
    UpdatedStatusOnly,
}

impl OperationResult {
    /// Upstream's string: `unchanged`, `created`, `updated`, `updatedStatus`,
    /// `updatedStatusOnly`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationResult::Unchanged => "unchanged",
            OperationResult::Created => "created",
            OperationResult::Updated => "updated",
            OperationResult::UpdatedStatus => "updatedStatus",
            OperationResult::UpdatedStatusOnly => "updatedStatusOnly",
        }
    }
}

impl std::fmt::Display for OperationResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
#[path = "controllerutil_tests.rs"]
mod tests;
