//! The volume controllers of kube-controller-manager (upstream `pkg/controller/volume`):
//! [`persistentvolume`] binds PersistentVolumeClaims to PersistentVolumes, the others
//! protect claims and volumes in use, hand expansions to the resizer, attach CSI volumes
//! to the nodes their pods run on and create the claims of generic ephemeral volumes.

pub mod attachdetach;
pub mod common;
pub mod ephemeral;
pub mod expand;
pub mod persistentvolume;
pub mod pvcprotection;
pub mod pvprotection;
