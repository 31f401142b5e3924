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
pub mod server;
pub mod ssa;
pub mod store;
pub mod table;

pub mod strategic_merge;
pub mod strategy;
pub mod tls;
pub mod validation;

/// The answers a real kube-apiserver 1.36 gave, recorded in
/// `tests/fixtures/kube-apiserver-1.36` (see its README): what unit tests compare with.
#[cfg(test)]
pub(crate) mod reference {
    use std::path::PathBuf;

    /// The folder of the recorded answers, or its `sub` folder.
    pub fn dir(sub: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kube-apiserver-1.36")
            .join(sub)
    }

    /// A recorded JSON answer (`objects/pod.json`).
    pub fn fixture(path: &str) -> serde_json::Value {
        let p = dir(path);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }
}
