//! No import circles between modules (issue 44, item 4).
//!
//! Reads every crate of the workspace from its source (`syn`), builds the
//! graph "file A uses an item defined in file B" and fails on any circle
//! (a strongly connected component of more than one file), naming the
//! files and, for each edge of the circle, the path that makes it.
//!
//! An edge goes to the file that *defines* the item: a path through a
//! re-export (`pub use child::X` in a parent, `crate::X` through `lib.rs`)
//! is followed to where `X` is declared, and the re-export itself is an
//! edge of the module that writes it. `mod child;` alone is no edge (a
//! parent owns its children; a child may use its parent). Items under
//! `#[cfg(test)]` are left out: tests may reach anywhere.
//!
//! `cargo-modules dependencies --acyclic` answers the same question through
//! rust-analyzer, but is a tool to install (rust-analyzer's crates, built
//! from source) on every CI machine; this reads the same `use` and path
//! facts with `syn`, already in the graph, in about two seconds.
//!
//! Measured on 2026-12-06 before the moves of issue 44: seven circles (app
//! retention <-> dashboard revocation; app settings <-> auth <-> body_limit
//! <-> routes/tasks <-> services/decider <-> dashboard settings/scope, 9
//! files; engine act <-> conclude <-> tick <-> resident, 8 files; github
//! client <-> publish/*, 6 files; github credentials <-> jwt <-> signer;
//! runner provider <-> jobs <-> providers/http; the GitHub fake's oauth <->
//! state). Each was undone by moving one item or two (CHANGELOG).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module (a file or an inline `mod x { }`) of one crate.
#[derive(Debug, Default)]
struct Module {
    /// Index of the file that holds it (the graph's node).
    file: usize,
    parent: Option<usize>,
    /// Child modules by name.
    children: HashMap<String, usize>,
    /// Items declared here (fn, struct, enum, trait, type, const, static, macro).
    items: BTreeSet<String>,
    /// `use` names: the name brought in -> its path as written.
    uses: HashMap<String, Vec<String>>,
    /// `use path::*` sources.
    globs: Vec<Vec<String>>,
}

#[derive(Default)]
struct Crate {
    files: Vec<PathBuf>,
    modules: Vec<Module>,
    /// (module, parsed items) to walk in the second pass.
    bodies: Vec<(usize, Vec<syn::Item>)>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| match &a.meta {
        // `cfg(test)`, `cfg(all(test, ...))`; not `cfg(not(test))`.
        syn::Meta::List(list) if list.path.is_ident("cfg") => {
            let text = list.tokens.to_string();
            let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
            words.contains(&"test") && !words.contains(&"not")
        }
        _ => false,
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Flattens a `use` tree into (name brought in, full path) and glob paths.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(String, Vec<String>)>,
    globs: &mut Vec<Vec<String>>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out, globs);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last() {
                    out.push((last.clone(), prefix.clone()));
                }
            } else {
                let mut path = prefix.clone();
                path.push(name.clone());
                out.push((name, path));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            let name = r.ident.to_string();
            if name != "self" {
                path.push(name);
            }
            out.push((r.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => globs.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out, globs);
            }
        }
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    Some(match item {
        syn::Item::Const(i) => i.ident.to_string(),
        syn::Item::Enum(i) => i.ident.to_string(),
        syn::Item::Fn(i) => i.sig.ident.to_string(),
        syn::Item::Macro(i) => i.ident.as_ref()?.to_string(),
        syn::Item::Static(i) => i.ident.to_string(),
        syn::Item::Struct(i) => i.ident.to_string(),
        syn::Item::Trait(i) => i.ident.to_string(),
        syn::Item::TraitAlias(i) => i.ident.to_string(),
        syn::Item::Type(i) => i.ident.to_string(),
        syn::Item::Union(i) => i.ident.to_string(),
        _ => return None,
    })
}

impl Crate {
    fn file_index(&mut self, path: &Path) -> usize {
        if let Some(i) = self.files.iter().position(|f| f == path) {
            return i;
        }
        self.files.push(path.to_path_buf());
        self.files.len() - 1
    }

    /// Loads the module in `path` (a file) and, recursively, its children.
    fn load_file(&mut self, path: &Path, parent: Option<usize>, mod_rs: bool) -> usize {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
        let file_index = self.file_index(path);
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        // Where `mod child;` looks for its file.
        let dir = path.parent().unwrap().to_path_buf();
        let child_dir = if mod_rs { dir.clone() } else { dir.join(&stem) };
        self.load_items(file.items, file_index, parent, &dir, &child_dir)
    }

    fn load_items(
        &mut self,
        items: Vec<syn::Item>,
        file: usize,
        parent: Option<usize>,
        dir: &Path,
        child_dir: &Path,
    ) -> usize {
        let id = self.modules.len();
        self.modules.push(Module { file, parent, ..Module::default() });
        let mut kept = Vec::new();
        for item in items {
            let attrs: &[syn::Attribute] = match &item {
                syn::Item::Const(i) => &i.attrs,
                syn::Item::Enum(i) => &i.attrs,
                syn::Item::Fn(i) => &i.attrs,
                syn::Item::Impl(i) => &i.attrs,
                syn::Item::Macro(i) => &i.attrs,
                syn::Item::Mod(i) => &i.attrs,
                syn::Item::Static(i) => &i.attrs,
                syn::Item::Struct(i) => &i.attrs,
                syn::Item::Trait(i) => &i.attrs,
                syn::Item::Type(i) => &i.attrs,
                syn::Item::Union(i) => &i.attrs,
                syn::Item::Use(i) => &i.attrs,
                _ => &[],
            };
            if is_cfg_test(attrs) {
                continue;
            }
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let child = if let Some((_, inner)) = m.content {
                        let sub = child_dir.join(&name);
                        self.load_items(inner, file, Some(id), child_dir, &sub)
                    } else {
                        let target = match path_attr(&m.attrs) {
                            Some(p) => dir.join(p),
                            None => {
                                let flat = child_dir.join(format!("{name}.rs"));
                                if flat.exists() { flat } else { child_dir.join(&name).join("mod.rs") }
                            }
                        };
                        let mod_rs = target.file_name().is_some_and(|n| n == "mod.rs");
                        self.load_file(&target, Some(id), mod_rs)
                    };
                    self.modules[id].children.insert(name, child);
                }
                syn::Item::Use(u) => {
                    let mut out = Vec::new();
                    let mut globs = Vec::new();
                    flatten_use(&u.tree, &mut Vec::new(), &mut out, &mut globs);
                    let m = &mut self.modules[id];
                    m.uses.extend(out);
                    m.globs.extend(globs);
                    kept.push(syn::Item::Use(u));
                }
                other => {
                    if let Some(name) = item_name(&other) {
                        self.modules[id].items.insert(name);
                    }
                    kept.push(other);
                }
            }
        }
        self.bodies.push((id, kept));
        id
    }

    /// Whether the file of module `outer` holds module `inner` or one of
    /// its ancestors (`outer`'s file is `inner`'s own or an ancestor's).
    fn owns(&self, outer: usize, inner: usize) -> bool {
        let file = self.modules[outer].file;
        let mut m = Some(inner);
        while let Some(cur) = m {
            if self.modules[cur].file == file {
                return true;
            }
            m = self.modules[cur].parent;
        }
        false
    }

    fn root(&self, mut m: usize) -> usize {
        while let Some(p) = self.modules[m].parent {
            m = p;
        }
        m
    }

    /// The module that defines what `path` (written in module `at`) names,
    /// or `None` for something outside the crate or not found.
    fn resolve(&self, at: usize, path: &[String], depth: u32) -> Option<usize> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let (mut cur, rest) = match path[0].as_str() {
            "crate" => (self.root(at), &path[1..]),
            "self" => (at, &path[1..]),
            "super" => {
                let mut cur = at;
                let mut i = 0;
                while path.get(i).is_some_and(|s| s == "super") {
                    cur = self.modules[cur].parent?;
                    i += 1;
                }
                (cur, &path[i..])
            }
            first => {
                let m = &self.modules[at];
                if m.children.contains_key(first) || m.items.contains(first) || m.uses.contains_key(first) {
                    (at, path)
                } else {
                    return None;
                }
            }
        };
        for (i, seg) in rest.iter().enumerate() {
            let m = &self.modules[cur];
            if let Some(&child) = m.children.get(seg) {
                cur = child;
                continue;
            }
            if m.items.contains(seg) {
                return Some(cur);
            }
            if let Some(target) = m.uses.get(seg) {
                let mut full = target.clone();
                full.extend(rest[i + 1..].iter().cloned());
                return self.resolve(cur, &full, depth + 1);
            }
            for glob in &m.globs {
                let mut full = glob.clone();
                full.extend(rest[i..].iter().cloned());
                if let Some(found) = self.resolve(cur, &full, depth + 1) {
                    return Some(found);
                }
            }
            return Some(cur);
        }
        Some(cur)
    }
}

/// Collects the paths an item's body mentions (types, expressions,
/// patterns, and `crate::`/`super::`/`self::` paths inside macro calls).
struct Paths(Vec<Vec<String>>);

impl<'ast> Visit<'ast> for Paths {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.0.push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        scan_tokens(m.tokens.clone(), &mut self.0);
        syn::visit::visit_macro(self, m);
    }
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}
    /// `pub(crate)`, `pub(super)`, `pub(in path)` name no item.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
}

fn scan_tokens(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let TokenTree::Group(g) = &tokens[i] {
            scan_tokens(g.stream(), out);
            i += 1;
            continue;
        }
        let mut path = Vec::new();
        let mut j = i;
        while let Some(TokenTree::Ident(id)) = tokens.get(j) {
            path.push(id.to_string());
            let colons = matches!(
                (tokens.get(j + 1), tokens.get(j + 2)),
                (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                    if a.as_char() == ':' && b.as_char() == ':'
            );
            if !colons {
                break;
            }
            j += 3;
        }
        if path.len() > 1 {
            out.push(path);
            i = j + 1;
        } else {
            i += 1;
        }
    }
}

/// A circle: the files of one strongly connected component, and the edges
/// inside it with the first path that makes each.
struct Circle {
    files: Vec<PathBuf>,
    edges: Vec<(PathBuf, PathBuf, String)>,
}

fn circles(root_file: &Path) -> Vec<Circle> {
    let mut krate = Crate::default();
    let mod_rs = true;
    krate.load_file(root_file, None, mod_rs);
    // edges[from][to] = the path that makes it
    let mut edges: BTreeMap<usize, BTreeMap<usize, String>> = BTreeMap::new();
    let bodies = std::mem::take(&mut krate.bodies);
    for (module, items) in &bodies {
        let from = krate.modules[*module].file;
        let mut paths = Vec::new();
        for item in items {
            if let syn::Item::Use(u) = item {
                let mut out = Vec::new();
                let mut globs = Vec::new();
                flatten_use(&u.tree, &mut Vec::new(), &mut out, &mut globs);
                paths.extend(out.into_iter().map(|(_, p)| p));
                paths.extend(globs);
            } else {
                let mut v = Paths(Vec::new());
                v.visit_item(item);
                paths.extend(v.0);
            }
        }
        for path in paths {
            if let Some(target) = krate.resolve(*module, &path, 0) {
                let to = krate.modules[target].file;
                if to != from && !krate.owns(*module, target) && !krate.owns(target, *module) {
                    edges.entry(from).or_default().entry(to).or_insert_with(|| path.join("::"));
                }
            }
        }
    }
    let n = krate.files.len();
    let sccs = tarjan(n, &edges);
    sccs.into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let set: BTreeSet<usize> = c.iter().copied().collect();
            let mut inner = Vec::new();
            for &a in &set {
                for (&b, why) in edges.get(&a).into_iter().flatten() {
                    if set.contains(&b) {
                        inner.push((krate.files[a].clone(), krate.files[b].clone(), why.clone()));
                    }
                }
            }
            Circle { files: set.iter().map(|&i| krate.files[i].clone()).collect(), edges: inner }
        })
        .collect()
}

fn tarjan(n: usize, edges: &BTreeMap<usize, BTreeMap<usize, String>>) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a BTreeMap<usize, BTreeMap<usize, String>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let targets: Vec<usize> = s.edges.get(&v).map(|m| m.keys().copied().collect()).unwrap_or_default();
        for w in targets {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Every crate root of the workspace (`src/lib.rs`, `src/main.rs`).
fn crate_roots(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for group in ["shared", "functions", "tools", "tests"] {
        let g = workspace.join(group);
        dirs.push(g.clone());
        for entry in std::fs::read_dir(&g).unwrap().flatten() {
            dirs.push(entry.path());
        }
    }
    let mut roots = Vec::new();
    for d in dirs {
        if !d.join("Cargo.toml").exists() {
            continue;
        }
        for root in ["src/lib.rs", "src/main.rs"] {
            if d.join(root).exists() {
                roots.push(d.join(root));
            }
        }
    }
    roots.sort();
    roots
}

#[test]
fn no_import_circles_between_modules() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let roots = crate_roots(&workspace);
    assert!(roots.len() >= 10, "found only {} crate roots under {}", roots.len(), workspace.display());
    let rel = |p: &Path| p.strip_prefix(&workspace).unwrap_or(p).display().to_string();
    let mut report = String::new();
    let mut count = 0;
    for root in &roots {
        for circle in circles(root) {
            count += 1;
            let _ = writeln!(report, "circle {count} ({} files):", circle.files.len());
            for f in &circle.files {
                let _ = writeln!(report, "    {}", rel(f));
            }
            for (a, b, why) in &circle.edges {
                let _ = writeln!(report, "    {} -> {}   ({why})", rel(a), rel(b));
            }
        }
    }
    assert!(
        count == 0,
        "{count} import circle(s) between modules: move one item so that no module \
         uses one that uses it back (tests/checks/import_cycles.rs)\n{report}"
    );
}
