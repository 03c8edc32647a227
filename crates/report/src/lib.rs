//! rtgauge-report: what a person or another program reads of a run.
//!
//! `report` (the summary, JSON, HTML and SVG plots, comparisons, standard output), `interchange`
//! (other tools' formats, both ways), `metrics` (the live figures for Prometheus) and `http` (the
//! HTTP/1 layer under the metrics and the dashboard).
#![deny(unsafe_code)]

use rtgauge_forecast::forecast;
use rtgauge_measure::{aggregate, audit, load, probe, scenario, trace, verdict};
use rtgauge_model::{result, vocab};
use rtgauge_sys::sys;

pub mod http;
pub mod interchange;
pub mod metrics;
pub mod report;
