//! The checkout of adapters whose create call cannot check out: fixed git
//! argv in the sandbox, over an archive the edge downloads or a public
//! clone.

use super::http::fetch_archive;
use crate::checkout::{CheckoutSource, Provision};
use crate::provider::{Exec, ProviderError, SandboxProvider, SandboxRef, baseline, fixed_git, git_ok};
use crate::request::SandboxRequest;

/// Puts `request.repository` at `request.git_ref` into `root` with argv
/// fixed by this crate, for providers whose create call cannot check out:
/// an archive is downloaded by the edge (`client`, bounded, with the
/// source's header if it has one) and uploaded as a file, then unpacked and
/// committed as the baseline the diff is taken against; a public clone
/// fetches the one commit (`--depth 1`, so fork heads and large
/// repositories work). Every step is bounded by
/// `provision.checkout_timeout_ms`. No URL with a token, and no header
/// value, is ever in an argv.
#[cfg_attr(
    not(all(feature = "custom", feature = "e2b", feature = "daytona", feature = "vercel", feature = "cloudflare")),
    allow(dead_code, reason = "the adapters that check out by archive are left out")
)]
pub(crate) async fn checkout<P: SandboxProvider + ?Sized, C: agent_zero_ports::HttpClient>(
    provider: &P,
    client: &C,
    external_id: &str,
    root: &str,
    request: &SandboxRequest,
    provision: &Provision<'_>,
) -> Result<(), ProviderError> {
    let outside = SandboxRef { external_id: external_id.to_owned(), root: String::new() };
    let timeout = provision.checkout_timeout_ms;
    let mut steps: Vec<(&'static str, Vec<String>)> = Vec::new();
    let argv = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<String>>();
    match provision.source {
        CheckoutSource::PublicClone => {
            let url = format!("https://github.com/{}.git", request.repository);
            steps.push(("checkout", argv(&["git", "init", "--quiet", root])));
            steps.push((
                "fetch",
                argv(&["git", "-C", root, "fetch", "--quiet", "--depth", "1", "--", &url, &request.git_ref]),
            ));
            steps.push(("checkout", argv(&["git", "-C", root, "checkout", "--quiet", "--detach", "FETCH_HEAD", "--"])));
        }
        CheckoutSource::Archive { url, commit, authorization } => {
            let archive = fetch_archive(client, provider.kind().as_str(), url, authorization.as_ref(), timeout).await?;
            let file = format!("{}.agent-zero.tar.gz", root.trim_end_matches('/'));
            provider.write_file(&outside, &file, &archive).await?;
            steps.push(("unpack", argv(&["mkdir", "-p", "--", root])));
            steps
                .push(("unpack", argv(&["tar", "-xzf", &file, "--strip-components=1", "--no-same-owner", "-C", root])));
            steps.push(("unpack", argv(&["rm", "-f", "--", &file])));
            steps.extend(baseline(root, commit));
        }
    }
    for (operation, argv) in steps {
        let exec = Exec { argv, timeout_ms: timeout, ..fixed_git(&[]) };
        let out = provider.exec(&outside, &exec).await?;
        if out.timed_out {
            return Err(ProviderError::Refused {
                provider: provider.kind().as_str(),
                operation,
                reason: format!("the checkout took longer than {timeout} ms"),
            });
        }
        git_ok(provider.kind(), operation, &out)?;
    }
    Ok(())
}
