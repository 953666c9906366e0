//! riffle-toolkit (placeholder; filled in by its owner).
