//! coxswain's embedded Kubernetes-compatible API server.
//!
//! The server answers the Kubernetes HTTP API for the built-in kinds listed in
//! [`catalog`], with upstream semantics: resourceVersions, watches, selectors, patches,
//! subresources, defaulting, validation and `Status` errors. Real clients (`kubectl`,
//! client-go, the Python client, kube-rs) drive it unmodified.
//!
//! Start with [`server::Config`] and [`server::start`]: they open the storage, generate
//! TLS material and a kubeconfig, and serve.

#![warn(missing_docs)]

pub mod admission;
pub mod api;
pub mod catalog;
pub mod conversion;
pub mod crd;
pub mod defaults;
pub mod discovery;
pub mod filter;
pub mod http;
pub mod json_dups;
pub mod openapi;
pub mod patch;
pub mod patch_meta;
pub mod persist;
pub mod protobuf;
pub mod request;
pub mod schema;
pub mod selector;
pub mod server;
pub mod ssa;
pub mod status;
pub mod store;
pub mod table;

pub mod strategic_merge;
pub mod strategy;
pub mod tls;
pub mod validation;
