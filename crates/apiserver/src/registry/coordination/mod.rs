//! `coordination.k8s.io`: Leases.

pub mod lease;
