//! The cases, one module per feature. Each case takes the runtime it runs on
//! and panics on failure.

mod health;
mod lifecycle;
mod webhooks;
mod tasks;
mod pages;

use crate::Case;

/// Every case, in order.
pub(crate) fn all() -> impl Iterator<Item = &'static Case> {
    [health::CASES, webhooks::CASES, lifecycle::CASES, pages::CASES, tasks::CASES].into_iter().flatten()
}
