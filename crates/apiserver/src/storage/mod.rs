//! The object store: every object by resource and key, resourceVersions, the event
//! history watches resume from ([`store`]), and the group commit that makes writes
//! durable on disk before they are acknowledged ([`persist`]), and snapshots of it
//! ([`snapshot`]).

#[cfg(feature = "failpoints")]
pub mod failpoints;
pub mod persist;
pub mod snapshot;
pub mod store;
