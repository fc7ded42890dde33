//! The cases, one module per feature. Each case takes the runtime it runs on
//! and panics on failure.

mod atomic;
mod bounded;
mod byproducts;
mod checkout;
mod cli;
mod cli_runs;
mod commit_point;
mod dashboard;
mod entry;
mod exactly_once;
mod forges;
mod gitea;
mod gitea_side_branch;
mod gitlab;
mod health;
mod identity;
mod intake_paths;
mod lifecycle;
mod limits;
mod pages;
mod platform;
mod providers;
mod quotes;
mod receipts;
mod retention;
mod review;
mod run_bounds;
mod tasks;
mod trust;
mod webhooks;
mod witness;

use crate::Case;

/// Every case, in order.
pub(crate) fn all() -> impl Iterator<Item = &'static Case> {
    [
        health::CASES,
        webhooks::CASES,
        forges::CASES,
        gitea::CASES,
        gitea_side_branch::CASES,
        gitlab::CASES,
        intake_paths::CASES,
        entry::CASES,
        lifecycle::CASES,
        quotes::CASES,
        trust::CASES,
        exactly_once::CASES,
        platform::CASES,
        identity::CASES,
        pages::CASES,
        dashboard::CASES,
        tasks::CASES,
        limits::CASES,
        commit_point::CASES,
        atomic::CASES,
        checkout::CASES,
        review::CASES,
        cli::CASES,
        cli_runs::CASES,
        retention::CASES,
        byproducts::CASES,
        bounded::CASES,
        run_bounds::CASES,
        providers::CASES,
        receipts::CASES,
        witness::CASES,
    ]
    .into_iter()
    .flatten()
}
