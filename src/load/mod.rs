//! Stage three of the flow: loads, the disturbances a measurement runs under. For now this
//! holds the calibrated stall used to prove that a measurement catches what it must catch;
//! the load generators (hackbench, cpu, vm, io, ...) join it here.

pub mod stall;
