//! The cases, one module per feature. Each case takes the runtime it runs on
//! and panics on failure.

mod commit_point;
mod exactly_once;
mod atomic;
mod cli;
mod checkout;
mod health;
mod identity;
mod lifecycle;
mod limits;
mod webhooks;
mod tasks;
mod trust;
mod pages;
mod review;
mod retention;
mod byproducts;

use crate::Case;

/// Every case, in order.
pub(crate) fn all() -> impl Iterator<Item = &'static Case> {
    [health::CASES, webhooks::CASES, lifecycle::CASES, trust::CASES, exactly_once::CASES, identity::CASES, pages::CASES, tasks::CASES, limits::CASES, commit_point::CASES, atomic::CASES, checkout::CASES, review::CASES, cli::CASES, retention::CASES, byproducts::CASES].into_iter().flatten()
}
