//! The kinds the server serves and what each does differently.
//!
//! The [`catalog`] lists every built-in kind once, with its names and its strategy;
//! custom resources join it from their CustomResourceDefinitions ([`custom`]). A
//! strategy holds what upstream keeps in `pkg/registry/<group>/<resource>/strategy.go`:
//! defaults, what create and update keep or reset, validation, the table printer,
//! selectable fields, subresources and delete behaviour.

pub mod admission;
pub mod catalog;
pub mod conversion;
pub mod custom;
pub mod defaults;
pub mod strategy;
pub mod table;
pub mod validation;
pub mod versions;
