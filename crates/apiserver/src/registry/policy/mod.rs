//! `policy`: PodDisruptionBudgets.

pub mod poddisruptionbudget;
