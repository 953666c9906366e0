//! riffle-catalog (placeholder; filled in by its owner).
