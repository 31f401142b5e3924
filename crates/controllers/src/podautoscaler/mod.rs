//! The horizontal pod autoscaler (upstream `pkg/controller/podautoscaler`).

pub mod normalize;
pub mod replica_calculator;
