//! Adapters over [`agent_zero_ports::HttpClient`]. Each owns its provider's
//! credential as constructor state; nothing else sees it.

mod cloudflare;
mod custom;
mod daytona;
mod e2b;
mod http;
mod vercel;

pub use cloudflare::CloudflareSandbox;
pub use custom::CustomSandbox;
pub use daytona::Daytona;
pub use e2b::E2b;
pub(crate) use http::fetch_archive;
pub use http::shell_quote;
pub use vercel::{VercelSandbox, vercel_project};
