//! rtgauge-model: the vocabulary every layer speaks and the result document every stage fills.
//!
//! The bottom stair of the workspace (docs/architecture.md): `vocab` (units, CPU lists, policies
//! and RT priorities, the percentile table, text as shown) and `result` (every type a document
//! serialises). It depends on no other crate of rtgauge, so nothing it defines can reach up.
#![deny(unsafe_code)]

pub mod keep;
pub mod result;
pub mod vocab;
