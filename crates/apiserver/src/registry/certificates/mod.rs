//! `certificates.k8s.io`.

pub mod certificatesigningrequest;
