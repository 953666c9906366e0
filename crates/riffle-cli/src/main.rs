//! The `riffle` binary.
fn main() {}
