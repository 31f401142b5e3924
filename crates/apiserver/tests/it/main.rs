//! The integration tests of `coxswain-apiserver`, linked into one binary: each test
//! binary links the whole dependency tree, so one binary instead of several keeps
//! the build small and fast.

mod admission_policies;
mod aggregation;
mod authn;
mod common;
mod crds;
mod eviction;
mod flowcontrol;
mod generation;
mod kube_rs;
mod layers;
mod limitranger;
mod metrics;
mod podlog;
mod protobuf;
mod protobuf_responses;
mod rbac;
mod rbac_bootstrap;
mod reference;
mod roundtrip;
mod serviceaccount_admission;
mod services;
mod storage_faults;
mod tables;
mod webhooks;
