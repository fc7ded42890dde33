//! The cases, one module per feature. Each case takes the runtime it runs on
//! and panics on failure.

mod health;

use crate::Case;

/// Every case, in order.
pub(crate) fn all() -> impl Iterator<Item = &'static Case> {
    [health::CASES].into_iter().flatten()
}
