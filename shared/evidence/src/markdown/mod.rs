//! GitHub-flavoured Markdown renderers.

mod check_run;
mod document;
pub(crate) mod escape;
mod issue_comment;
mod limit;
mod pull_request;
pub(crate) mod review;
pub(crate) mod sections;
mod thread;

pub use check_run::{CheckRunOutput, TITLE_MAX_BYTES, render_check_run};
pub use document::render_markdown_document;
pub use issue_comment::render_issue_comment;
pub use pull_request::render_pull_request_body;
pub(crate) use review::ledger as review_ledger;
pub use review::{ReviewComment, ReviewOutput, render_review};
pub use thread::render_thread_answer;
