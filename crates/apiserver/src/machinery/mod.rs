//! What knows JSON and schemas but no kind: the layer every other one builds on.
//!
//! Patches ([`patch`]: JSON, merge and strategic merge), server-side apply ([`ssa`]),
//! OpenAPI schema utilities over the built-in types ([`schema`]), protobuf request
//! bodies ([`protobuf`]), structural schemas of custom resources ([`structural`]: prune,
//! default, validate), CEL validation rules ([`cel`]), JSONPath ([`jsonpath`]) and
//! duplicate-key-aware JSON parsing ([`json_dups`]).

pub mod cel;
pub mod json_dups;
pub mod jsonpath;
pub mod patch;
pub mod protobuf;
pub mod schema;
pub mod ssa;
pub mod structural;
pub mod tls;
pub mod user;
