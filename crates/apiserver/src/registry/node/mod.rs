//! `node.k8s.io`: RuntimeClasses, and the RuntimeClass admission plugin that applies a
//! class's overhead and scheduling constraints to the pods that name it.

pub mod runtimeclass;
