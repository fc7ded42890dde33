//! The in-memory git object database of one repository: blobs, trees,
//! commits and refs, addressed by content like git.
//!
//! Object ids are 40 hex digits (the shape of git's SHA-1) derived with
//! SHA-256 from git's object header and content: content-addressed and
//! stable, but not equal to what `git hash-object` prints. A commit id can be
//! given from outside ([`GitStore::put_commit_with_id`]) so the fake's head
//! matches a real local repository's commit.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest as _, Sha256};

/// Regular file mode.
pub(crate) const FILE_MODE: &str = "100644";

/// A tree, flattened: repository-relative path of each blob to `(mode, sha)`.
pub(crate) type FlatTree = BTreeMap<String, (String, String)>;

/// A commit object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Commit {
    pub(crate) tree: String,
    pub(crate) parents: Vec<String>,
    pub(crate) message: String,
    pub(crate) author_name: String,
    pub(crate) author_email: String,
    pub(crate) date: String,
}

#[derive(Debug, Clone)]
enum Object {
    Blob(Vec<u8>),
    Tree(FlatTree),
    Commit(Commit),
}

/// One repository's objects and refs (`heads/main` -> commit sha).
#[derive(Debug, Default)]
pub(crate) struct GitStore {
    objects: HashMap<String, Object>,
    pub(crate) refs: BTreeMap<String, String>,
}

fn object_id(kind: &str, content: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(format!("{kind} {}\0", content.len()).as_bytes());
    hash.update(content);
    hex::encode(hash.finalize())[..40].to_owned()
}

impl GitStore {
    /// Stores a blob and returns its id.
    pub(crate) fn put_blob(&mut self, bytes: &[u8]) -> String {
        let id = object_id("blob", bytes);
        self.objects.entry(id.clone()).or_insert_with(|| Object::Blob(bytes.to_vec()));
        id
    }

    /// Stores a flat tree, and a tree object for each of its directories, and
    /// returns the root tree's id.
    pub(crate) fn put_tree(&mut self, flat: FlatTree) -> String {
        let mut dirs: Vec<String> = flat
            .keys()
            .flat_map(|path| path.match_indices('/').map(|(i, _)| path[..i].to_owned()).collect::<Vec<_>>())
            .collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let prefix = format!("{dir}/");
            let sub: FlatTree = flat
                .iter()
                .filter_map(|(p, e)| p.strip_prefix(&prefix).map(|rest| (rest.to_owned(), e.clone())))
                .collect();
            self.put_tree_object(sub);
        }
        self.put_tree_object(flat)
    }

    fn put_tree_object(&mut self, flat: FlatTree) -> String {
        let listing: String = flat.iter().map(|(path, (mode, sha))| format!("{mode} {sha}\t{path}\n")).collect();
        let id = object_id("tree", listing.as_bytes());
        self.objects.entry(id.clone()).or_insert(Object::Tree(flat));
        id
    }

    /// Stores a commit and returns its id.
    pub(crate) fn put_commit(&mut self, commit: Commit) -> String {
        let mut text = format!("tree {}\n", commit.tree);
        for parent in &commit.parents {
            text.push_str(&format!("parent {parent}\n"));
        }
        text.push_str(&format!(
            "author {} <{}> {}\n\n{}",
            commit.author_name, commit.author_email, commit.date, commit.message
        ));
        let id = object_id("commit", text.as_bytes());
        self.objects.insert(id.clone(), Object::Commit(commit));
        id
    }

    /// Stores a commit under an id chosen by the caller.
    pub(crate) fn put_commit_with_id(&mut self, id: &str, commit: Commit) {
        self.objects.insert(id.to_ascii_lowercase(), Object::Commit(commit));
    }

    /// The blob's bytes.
    pub(crate) fn blob(&self, sha: &str) -> Option<&[u8]> {
        match self.objects.get(sha) {
            Some(Object::Blob(bytes)) => Some(bytes),
            _ => None,
        }
    }

    /// The flat tree.
    pub(crate) fn tree(&self, sha: &str) -> Option<&FlatTree> {
        match self.objects.get(sha) {
            Some(Object::Tree(flat)) => Some(flat),
            _ => None,
        }
    }

    /// The commit.
    pub(crate) fn commit(&self, sha: &str) -> Option<&Commit> {
        match self.objects.get(sha) {
            Some(Object::Commit(commit)) => Some(commit),
            _ => None,
        }
    }

    /// The commit a ref names: a full or abbreviated (7+) commit sha, a
    /// branch or tag name, `heads/x`, or `refs/heads/x`.
    pub(crate) fn resolve(&self, name: &str) -> Option<String> {
        let name = name.strip_prefix("refs/").unwrap_or(name);
        for candidate in [name.to_owned(), format!("heads/{name}"), format!("tags/{name}")] {
            if let Some(sha) = self.refs.get(&candidate) {
                return Some(sha.clone());
            }
        }
        let lower = name.to_ascii_lowercase();
        if lower.len() >= 7 && lower.len() <= 40 && lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut hits = self
                .objects
                .iter()
                .filter(|(id, object)| id.starts_with(&lower) && matches!(object, Object::Commit(_)));
            if let (Some((id, _)), None) = (hits.next(), hits.next()) {
                return Some(id.clone());
            }
        }
        None
    }

    /// The files of a commit.
    pub(crate) fn files_at(&self, commit: &str) -> Option<&FlatTree> {
        self.commit(commit).and_then(|c| self.tree(&c.tree))
    }

    /// Whether `ancestor` is `descendant` or reachable from it by parents.
    pub(crate) fn is_ancestor(&self, ancestor: &str, descendant: &str) -> bool {
        let mut stack = vec![descendant.to_owned()];
        let mut seen = std::collections::HashSet::new();
        while let Some(sha) = stack.pop() {
            if sha == ancestor {
                return true;
            }
            if seen.insert(sha.clone())
                && let Some(commit) = self.commit(&sha)
            {
                stack.extend(commit.parents.iter().cloned());
            }
        }
        false
    }

    /// A flat tree holding `files` as regular files.
    pub(crate) fn flat_from_files(&mut self, files: &[(&str, &str)]) -> FlatTree {
        files
            .iter()
            .map(|(path, content)| {
                let sha = self.put_blob(content.as_bytes());
                ((*path).to_owned(), (FILE_MODE.to_owned(), sha))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(tree: &str, parents: &[&str], message: &str) -> Commit {
        Commit {
            tree: tree.into(),
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            message: message.into(),
            author_name: "t".into(),
            author_email: "t@example.com".into(),
            date: "2025-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn content_addressed_and_resolvable() {
        let mut git = GitStore::default();
        let flat = git.flat_from_files(&[("src/a.py", "a"), ("b.txt", "b")]);
        let tree = git.put_tree(flat.clone());
        assert_eq!(git.put_tree(flat), tree, "same content, same id");
        let first = git.put_commit(commit(&tree, &[], "one"));
        let second = git.put_commit(commit(&tree, &[&first], "two"));
        git.refs.insert("heads/main".into(), second.clone());
        assert_eq!(git.resolve("main").as_deref(), Some(second.as_str()));
        assert_eq!(git.resolve("refs/heads/main").as_deref(), Some(second.as_str()));
        assert_eq!(git.resolve(&first[..7]).as_deref(), Some(first.as_str()));
        assert_eq!(git.resolve("nope"), None);
        assert!(git.is_ancestor(&first, &second) && !git.is_ancestor(&second, &first));
        assert_eq!(git.blob(&git.files_at(&second).unwrap()["src/a.py"].1), Some(&b"a"[..]));
    }
}
