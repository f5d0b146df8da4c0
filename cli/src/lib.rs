//! The `longrun` command line as data: its arguments (`args`) and how it exits (`exit`). Apart
//! from the binary so that tests can walk the argument tree; it must not run anything.

pub mod args;
pub mod exit;
