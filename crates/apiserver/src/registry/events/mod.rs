//! `events.k8s.io`: Events, served from core `v1` storage.

pub mod event;
