//! `rtgauge serve`: a read-only dashboard over a store — the fleet of boards, each board's
//! long-term view, every run's report, comparisons — and the same as JSON for scripts and
//! Grafana. `model.rs` is what a page shows; `pages/` draws it.

pub mod model;
pub mod pages;
