//! The one page shell of every HTML page the app serves (evidence, task
//! list, in-progress and error pages, the dashboard, the API docs):
//! document head, the Content-Security-Policy meta, one inline stylesheet,
//! the header with its navigation. No script, no external asset.

use crate::RenderOptions;
use crate::html::escape;
use crate::text::{Ctx, clean};

/// Inline stylesheet: system fonts, light and dark, tables that scroll or
/// stack on narrow screens, the dashboard's forms, the API docs' operations.
const CSS: &str = "\
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--info:#0969da;--code:rgba(127,127,127,.12)}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--info:#4493f8}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
header,main,footer{max-width:62rem;margin:0 auto;padding:.75rem 1rem}
header{border-bottom:1px solid var(--line);display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center}
header form{margin-left:auto}
footer{color:var(--muted);font-size:.875rem}
a{color:var(--info)}
h1{font-size:1.4rem;margin:.5rem 0}
h2{font-size:1.15rem;margin:1.75rem 0 .5rem;padding-bottom:.25rem;border-bottom:1px solid var(--line)}
code,pre{font:.875rem/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{background:var(--code);padding:.05rem .3rem;border-radius:4px}
pre{white-space:pre-wrap;background:var(--code);padding:.75rem;border-radius:6px;max-height:40rem;overflow:auto}
.untrusted{border-left:3px solid var(--warn)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
.num{text-align:right;white-space:nowrap}
.badge{display:inline-block;padding:.05rem .55rem;border-radius:1rem;font-size:.8rem;font-weight:600;border:1px solid currentColor;white-space:nowrap}
.success{color:var(--ok)}.failure{color:var(--bad)}.action_required{color:var(--warn)}.neutral,.muted{color:var(--muted)}
.warning{color:var(--bad);font-weight:600}
.notice{border-left:4px solid var(--ok);padding:.25rem .75rem}.refused{border-left:4px solid var(--bad);padding:.25rem .75rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}
dt{font-weight:600}dd{margin:0}
details{margin:.5rem 0}summary{cursor:pointer}
nav.pages{margin:1rem 0}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end}
label{display:flex;flex-direction:column;font-size:.85rem}
input,select,button,textarea{font:inherit}
button{padding:.35rem .9rem;border-radius:6px;border:1px solid var(--line);cursor:pointer}
button.approve{background:#1a7f37;color:#fff}button.reject{background:#cf222e;color:#fff}
.decide{display:flex;flex-wrap:wrap;gap:1rem}.decide form{display:flex;flex-direction:column;gap:.4rem}
a.signin{display:inline-block;padding:.5rem 1rem;border-radius:6px;border:1px solid currentColor;font-weight:600;text-decoration:none}
.op{border:1px solid var(--line);border-radius:6px;padding:.5rem 1rem;margin:1rem 0}.op table{margin:.5rem 0}
.method{font-weight:700;text-transform:uppercase;margin-right:.5rem}
@media (max-width:40rem){dl{grid-template-columns:1fr}dd{margin-bottom:.5rem}
table.stack thead{display:none}table.stack tr{display:block;border-bottom:1px solid var(--line);padding:.5rem 0}
table.stack td{display:block;border:0;padding:.1rem 0}}
";

/// The policy of a page that posts no form.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'";
/// The policy of a signed-in dashboard page: its forms post to this origin.
const CSP_FORMS: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'self'; base-uri 'none'";

/// Who is looking at a dashboard page: the principal's name and the
/// session's CSRF token (the sign-out form carries it).
#[derive(Debug, Clone, Copy)]
pub struct Viewer<'a> {
    pub name: &'a str,
    pub csrf: &'a str,
}

/// Which part of the app a page belongs to: what its header offers.
#[derive(Debug, Clone, Copy)]
pub enum Nav<'a> {
    /// Public pages (evidence, task list, API docs): the name links to the task list.
    Public,
    /// Dashboard pages: the name links to the dashboard; signed in, the
    /// header lists its pages and a sign-out form, and forms may post.
    Dashboard(Option<Viewer<'a>>),
}

/// A complete page: `title` is plain text (cleaned and escaped here), `body`
/// is HTML the caller built from escaped parts. Every link of the shell
/// starts with `options.base_path`.
pub fn render_page(options: &RenderOptions<'_>, title: &str, nav: Nav<'_>, body: &str) -> String {
    page(&Ctx::new(options), title, nav, body)
}

/// [`render_page`] that the browser loads again every `every_secs` seconds
/// (`<meta http-equiv="refresh">`: no script, so the strict policy stays).
pub fn render_refreshing_page(
    options: &RenderOptions<'_>,
    title: &str,
    nav: Nav<'_>,
    body: &str,
    every_secs: u32,
) -> String {
    shell(&Ctx::new(options), title, nav, body, Some(every_secs))
}

pub(crate) fn page(ctx: &Ctx<'_>, title: &str, nav: Nav<'_>, body: &str) -> String {
    shell(ctx, title, nav, body, None)
}

fn shell(ctx: &Ctx<'_>, title: &str, nav: Nav<'_>, body: &str, refresh_secs: Option<u32>) -> String {
    let base = escape(ctx.opts.base_path);
    let (home, account, csp) = match nav {
        Nav::Public => (format!("{base}/"), String::new(), CSP),
        Nav::Dashboard(None) => (format!("{base}/dashboard"), String::new(), CSP),
        Nav::Dashboard(Some(viewer)) => (
            format!("{base}/dashboard"),
            format!(
                "\n<a href=\"{base}/dashboard\">Tasks</a> <a href=\"{base}/dashboard/audit\">Audit log</a>\n\
<form method=\"post\" action=\"{base}/logout\"><span class=\"muted\">Signed in as <strong>{}</strong></span> \
<input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Sign out</button></form>",
                escape(&clean(ctx, viewer.name, false)),
                escape(&clean(ctx, viewer.csrf, false))
            ),
            CSP_FORMS,
        ),
    };
    let refresh =
        refresh_secs.map(|secs| format!("<meta http-equiv=\"refresh\" content=\"{secs}\">\n")).unwrap_or_default();
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{refresh}\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
<meta name=\"referrer\" content=\"no-referrer\">\n\
<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
<header><a href=\"{home}\">Agent Zero Edge</a>{account}</header>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(&clean(ctx, title, false))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_link_of_the_shell_starts_with_the_base_path() {
        let opts = RenderOptions { base_path: "/az", secrets: &["s3cr3t"], ..RenderOptions::default() };
        let public = render_page(&opts, "a <b> s3cr3t", Nav::Public, "<p>x</p>\n");
        assert!(public.contains("<header><a href=\"/az/\">Agent Zero Edge</a></header>"), "{public}");
        assert!(public.contains("<title>a &lt;b&gt; [redacted]</title>"), "{public}");
        assert!(public.contains("form-action 'none'") && public.contains("<main>\n<p>x</p>\n</main>"), "{public}");
        let viewer = Viewer { name: "github:<x>", csrf: "t\"k" };
        let signed = render_page(&opts, "t", Nav::Dashboard(Some(viewer)), "");
        for link in ["href=\"/az/dashboard\"", "href=\"/az/dashboard/audit\"", "action=\"/az/logout\""] {
            assert!(signed.contains(link), "{link}: {signed}");
        }
        assert!(signed.contains("Signed in as <strong>github:&lt;x&gt;</strong>"), "{signed}");
        assert!(signed.contains("name=\"csrf\" value=\"t&quot;k\"") && signed.contains("form-action 'self'"));
        let out = render_page(&opts, "t", Nav::Dashboard(None), "");
        assert!(out.contains("<a href=\"/az/dashboard\">Agent Zero Edge</a></header>"), "{out}");
        assert!(out.contains("form-action 'none'") && !out.contains("<form"), "{out}");
        assert!(!signed.contains("http-equiv=\"refresh\""), "{signed}");
        let refreshing = render_refreshing_page(&opts, "t", Nav::Dashboard(Some(viewer)), "", 60);
        let meta = "<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"60\">\n";
        assert!(refreshing.contains(meta), "{refreshing}");
        for html in [public, signed, out, refreshing] {
            assert!(!html.contains("<script") && !html.contains(" src="), "{html}");
        }
    }
}
