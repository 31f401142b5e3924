//! `policy`: PodDisruptionBudgets.

pub mod eviction;
pub mod poddisruptionbudget;
