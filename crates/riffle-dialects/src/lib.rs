//! riffle-dialects (placeholder; filled in by its owner).
