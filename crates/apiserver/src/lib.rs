//! coxswain's embedded Kubernetes-compatible API server.
//!
//! The server answers the Kubernetes HTTP API for the built-in kinds of its catalogue
//! and the custom resources its CustomResourceDefinitions define, with upstream
//! semantics: resourceVersions, watches, selectors, patches, server-side apply,
//! subresources, defaulting, validation, tables and `Status` errors. Real clients
//! (`kubectl`, client-go, the Python client, kube-rs) drive it unmodified.
//!
//! Start with [`server::Config`] and [`server::start`]: they open the storage, generate
//! TLS material and a kubeconfig, and serve.
//!
//! The code is in layers that depend one way (a test keeps it so):
//!
//! 1. `machinery`: what knows JSON and schemas but no kind: patches (JSON, merge,
//!    strategic), server-side apply, OpenAPI schema utilities, protobuf decoding,
//!    structural schemas and CEL;
//! 2. `storage`: the versioned object store, its event history and its durable
//!    commit to disk;
//! 3. `registry`: the catalogue of kinds and one strategy per kind (defaults, create
//!    and update rules, validation, table printer, selectable fields, subresources,
//!    delete behaviour), custom resources among them;
//! 4. [`auth`]: who sends a request and what they may do: authenticators, the RBAC
//!    authorizer and its bootstrap policy, request attributes;
//! 5. `endpoints`: HTTP, routing, content negotiation, the verbs, watch, discovery,
//!    OpenAPI documents and tables;
//! 6. [`server`]: start-up, TLS, bootstrap objects and the CRD controller.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admission;
pub mod auth;
mod endpoints;
mod machinery;
mod registry;
pub mod server;
mod storage;

/// Entry points for the crate's benchmarks (`benches/`); not an API.
#[doc(hidden)]
pub mod bench {
    use serde_json::Value;

    use crate::registry::catalog::{Catalog, ResourceDef, Subresource};

    /// A built-in resource, looked up once.
    #[derive(Clone, Copy)]
    pub struct Resource(&'static ResourceDef);

    /// The built-in resource served at `group/version/plural`.
    pub fn resource(group: &str, version: &str, plural: &str) -> Option<Resource> {
        Catalog::builtin()
            .lookup(group, version, plural)
            .map(Resource)
    }

    impl Resource {
        /// Record the managedFields of an update (of `/status` when `status`).
        pub fn record_update(
            self,
            status: bool,
            manager: &str,
            old: Option<&Value>,
            new: &mut Value,
        ) {
            let sub = status.then_some(Subresource::Status);
            crate::endpoints::managed::record_update(self.0, sub, manager, old, new);
        }

        /// The Go round trip a write takes (`storage`: as stored, else as decoded).
        pub fn roundtrip(self, obj: &mut Value, storage: bool) {
            let mode = if storage {
                crate::registry::rest::Mode::Storage
            } else {
                crate::registry::rest::Mode::Decode
            };
            crate::registry::rest::go_roundtrip(self.0, obj, mode);
        }

        /// A server-side apply of `config` over `live`.
        pub fn apply(
            self,
            manager: &str,
            live: Option<&Value>,
            config: &Value,
            force: bool,
        ) -> Result<Value, String> {
            crate::endpoints::managed::apply(self.0, None, manager, live, config, force)
                .map_err(|e| e.message.clone())
        }
    }

    /// An object's protobuf answer (`k8s\0` + `runtime.Unknown`), as the server encodes it.
    pub fn protobuf_encode(obj: &Value) -> Result<Vec<u8>, String> {
        crate::machinery::protobuf::encode::encode(obj)
            .ok_or_else(|| "no protobuf schema for this kind".to_string())?
    }

    /// A protobuf LIST answer from the stored JSON of its items, as the server builds it.
    pub fn protobuf_encode_list(
        api_version: &str,
        kind: &str,
        metadata: &Value,
        items: &[Vec<u8>],
    ) -> Result<Vec<u8>, String> {
        let items: Vec<_> = items
            .iter()
            .map(|i| {
                crate::machinery::protobuf::encode::ListItem::Json(bytes::Bytes::from(i.clone()))
            })
            .collect();
        crate::machinery::protobuf::encode::encode_list(api_version, kind, metadata, &items)
            .ok_or_else(|| "no protobuf schema for this kind".to_string())?
    }

    /// Stored objects (each with its empty protobuf cache) from their JSON.
    pub struct Stored(Vec<crate::storage::store::StoredObject>);

    /// Store objects as the server does (no selectable fields).
    pub fn stored(items: &[Vec<u8>]) -> Result<Stored, String> {
        items
            .iter()
            .map(|i| {
                let v: Value = serde_json::from_slice(i).map_err(|e| e.to_string())?;
                Ok(crate::storage::store::StoredObject::with_json(
                    0,
                    bytes::Bytes::from(i.clone()),
                    &v,
                    &[],
                ))
            })
            .collect::<Result<_, String>>()
            .map(Stored)
    }

    /// A protobuf LIST answer of stored objects, as the server builds it: each item's
    /// encoding cached with the object (the first LIST fills the caches, later ones
    /// reuse them).
    pub fn protobuf_encode_list_stored(
        api_version: &str,
        kind: &str,
        metadata: &Value,
        stored: &Stored,
    ) -> Result<Vec<u8>, String> {
        let items = stored
            .0
            .iter()
            .map(|o| o.list_item().map_err(|e| e.message.clone()))
            .collect::<Result<Vec<_>, String>>()?;
        crate::machinery::protobuf::encode::encode_list(api_version, kind, metadata, &items)
            .ok_or_else(|| "no protobuf schema for this kind".to_string())?
    }

    /// Append one protobuf watch frame (length prefix + `WatchEvent`) for `obj`.
    pub fn protobuf_watch_event(out: &mut Vec<u8>, kind: &str, obj: &Value) -> Result<(), String> {
        crate::machinery::protobuf::encode::watch_event(out, kind, obj)
            .ok_or_else(|| "no protobuf schema for this kind".to_string())?
    }
}

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
