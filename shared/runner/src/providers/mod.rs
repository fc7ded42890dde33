//! Adapters over [`agent_zero_ports::HttpClient`]. Each owns its provider's
//! credential as constructor state; nothing else sees it.

#[cfg(feature = "cloudflare")]
mod cloudflare;
#[cfg(feature = "custom")]
mod custom;
#[cfg(feature = "daytona")]
mod daytona;
#[cfg(feature = "e2b")]
mod e2b;
mod git_checkout;
mod http;
#[cfg(feature = "vercel")]
mod vercel;

#[cfg(feature = "cloudflare")]
pub use cloudflare::CloudflareSandbox;
#[cfg(feature = "custom")]
pub use custom::CustomSandbox;
#[cfg(feature = "daytona")]
pub use daytona::Daytona;
#[cfg(feature = "e2b")]
pub use e2b::E2b;
pub use http::shell_quote;
#[cfg(feature = "vercel")]
pub use vercel::{VercelSandbox, vercel_project};
