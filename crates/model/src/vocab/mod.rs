//! Shared vocabulary: the quantities, CPU lists, policies, percentiles and counted nouns every
//! stage speaks of. A leaf: it depends on no other module of rtgauge, and every stage may use it.

pub mod address;
pub mod buckets;
pub mod cpus;
pub mod error;
pub mod length;
pub mod percentiles;
pub mod plural;
pub mod policy;
pub mod secrets;
pub mod table;
pub mod text;
pub mod units;
pub mod when;

pub use error::Error;
pub use plural::Count;
pub use text::shown;
