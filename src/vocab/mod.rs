//! Shared vocabulary: the quantities, CPU lists, policies and percentiles every stage speaks
//! of. A leaf: it depends on no other module of rtgauge, and every stage may use it.

pub mod cpus;
pub mod percentiles;
pub mod policy;
pub mod text;
pub mod units;

pub use text::shown;
