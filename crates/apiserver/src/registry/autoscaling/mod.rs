//! `autoscaling`: HorizontalPodAutoscalers (`v2`, and `v1` from `v2` storage).

pub mod conversion;
pub mod horizontalpodautoscaler;
