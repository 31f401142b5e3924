//! Binding (`v1`, `bindings`): only `create`, never stored; a POST binds the pod its
//! Binding names to a node, as `pods/binding` does (upstream serves both from the pod
//! storage's `BindingREST`; `endpoints::write` routes it).

use crate::registry::authorization::ReviewStrategy;
use crate::registry::catalog::Kind;

/// The `v1` kind: create-only like the reviews.
pub static KIND: Kind = Kind::new(&[], &ReviewStrategy);
