//! End-to-end harness (see tests/).
