//! riffle-store (placeholder; filled in by its owner).
