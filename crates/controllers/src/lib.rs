//! The built-in controllers of `coxswain controller-manager` and their registry.
//!
//! [`registry`] holds the descriptors (name, aliases, default, constructor) and the
//! `--controllers` selection; [`controller_manager`] runs the selected controllers under one
//! [`coxswain_runtime::manager::Manager`] with kube-controller-manager's flags.

pub mod controller_manager;
pub mod registry;

/// The registry of every built-in controller (kube-controller-manager's
/// `NewControllerDescriptors` for what coxswain implements).
pub fn builtin() -> registry::Registry {
    registry::Registry::new(vec![])
}
