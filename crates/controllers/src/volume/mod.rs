//! The volume controllers (upstream `pkg/controller/volume`): [`persistentvolume`] binds
//! PersistentVolumeClaims to PersistentVolumes.

pub mod persistentvolume;
