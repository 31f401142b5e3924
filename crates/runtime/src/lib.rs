//! coxswain's controller runtime: the controller-runtime model for Rust.
//!
//! Start with [`cache::Cache`]: one shared informer per kind feeds an indexed store
//! that every reader and controller in the process shares. The workqueue, controllers,
//! builder and manager build on it (see `ARCHITECTURE.md` at the repository root for the
//! whole picture). With the `envtest` feature, the `envtest` module starts the embedded API
//! server in-process for tests, and the `testing` module runs controllers on it under
//! seeded fault plans ([`fault`]: refused and lost writes, crashes, stale restarts, late
//! or dropped watch events, leadership moves) with their invariants checked on every
//! change. Label selectors, field errors, quantities and Go durations
//! come from [`apimachinery`], re-exported here.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod authfilter;
pub mod builder;
pub mod cache;
pub mod client;
pub mod controller;
pub mod controllerutil;
pub mod discovery;
#[cfg(feature = "envtest")]
pub mod envtest;
pub mod events;
pub mod fault;
pub mod finalizer;
pub mod handler;
pub mod healthz;
pub mod leaderelection;
pub mod manager;
pub mod metrics;
pub mod object;
pub mod predicate;
pub mod serving;
#[cfg(feature = "envtest")]
pub mod testing;
pub mod webhook;
pub mod workqueue;

pub use apimachinery;
pub use object::ObjectKey;
