//! `scheduling.k8s.io`: PriorityClasses.

pub mod priorityclass;
