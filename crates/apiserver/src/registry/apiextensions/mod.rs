//! `apiextensions.k8s.io`: CustomResourceDefinitions (the kind itself; the resources
//! they define are [`crate::registry::custom`]).

pub mod customresourcedefinition;
#[cfg(test)]
mod tests;
pub mod validation;
