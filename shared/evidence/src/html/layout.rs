//! The page shell: document head, inline stylesheet, header.

use crate::html::escape;
use crate::text::Ctx;

/// Inline stylesheet: system fonts, light and dark, tables that scroll or
/// stack on narrow screens.
const CSS: &str = "\
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--info:#0969da;--code:rgba(127,127,127,.12)}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--info:#4493f8}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
header,main,footer{max-width:62rem;margin:0 auto;padding:.75rem 1rem}
header{border-bottom:1px solid var(--line)}
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
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}
dt{font-weight:600}dd{margin:0}
details{margin:.5rem 0}summary{cursor:pointer}
nav.pages{margin:1rem 0}
@media (max-width:40rem){dl{grid-template-columns:1fr}dd{margin-bottom:.5rem}
table.stack thead{display:none}table.stack tr{display:block;border-bottom:1px solid var(--line);padding:.5rem 0}
table.stack td{display:block;border:0;padding:.1rem 0}}
";

/// A complete page. `title` is plain text (escaped here); `body` is HTML
/// built by this module's callers from escaped parts.
pub(crate) fn page(ctx: &Ctx<'_>, title: &str, body: &str) -> String {
    let home = format!("{}/", escape(ctx.opts.base_path));
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'\">\n\
<meta name=\"referrer\" content=\"no-referrer\">\n\
<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
<header><a href=\"{home}\">Agent Zero Edge</a></header>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}
