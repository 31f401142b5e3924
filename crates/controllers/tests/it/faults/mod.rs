//! Fault-injection scenarios for the built-in controllers: each runs under the runtime's
//! harness (`coxswain_runtime::testing`), once without faults and then under the
//! systematic fault plans, with its invariants checked on every observed change.

mod batch_sets;
mod network_auth;
mod nodes_volumes;
mod workloads;
