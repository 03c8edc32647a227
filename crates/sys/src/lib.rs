//! rtgauge-sys: the system layer, the only crate with `unsafe` code (see `sys`'s module doc).
#![deny(unsafe_code)]

use rtgauge_model::vocab;

pub mod sys;
