//! The PersistentVolume binder (upstream `pkg/controller/volume/persistentvolume`).

pub mod index;

/// Set on a claim once its initial binding is done (`pv.kubernetes.io/bind-completed`).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a volume or claim the binder bound (`pv.kubernetes.io/bound-by-controller`);
/// absent: the user pre-bound it.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The node the scheduler chose for a `WaitForFirstConsumer` claim.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner that must provision a claim.
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The deprecated beta form of [`ANN_STORAGE_PROVISIONER`], still set.
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The provisioner that created a volume (`pv.kubernetes.io/provisioned-by`).
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
/// The legacy class annotation, used when `spec.storageClassName` is not set.
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The default StorageClass marker.
pub const ANN_DEFAULT_STORAGE_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta default StorageClass marker, still honoured.
pub const ANN_BETA_DEFAULT_STORAGE_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
