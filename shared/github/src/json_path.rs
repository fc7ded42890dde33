//! The path of the payload field a JSON error is about, recovered from
//! serde_json's position alone (see [`json_path_at`]), so only a failed
//! parse pays for it. Pure: bytes in, path out.

/// One open container while [`json_path_at`] scans.
enum Frame {
    /// The key being read, and whether its `:` has been passed.
    Object { key: Option<String>, in_value: bool },
    /// The index of the element being read.
    Array { index: usize },
}

/// The path (`pull_request.head`, `issue.labels[0].name`, `.` for the
/// root) of the value serde_json was reading at `line`:`column` of `body`
/// when it failed, written the way `serde_path_to_error` writes it: a
/// wrong type, value or variant names the value itself; a missing or
/// unknown field names the object holding it.
///
/// serde_json positions an error just after the bytes it consumed: after
/// the offending scalar, before a `{`/`[` it refused, after a key it did
/// not know (before its `:`), or after the `}` of an object that lacked a
/// field. Scanning the valid prefix up to there and keeping the open
/// containers is enough to name it.
pub fn json_path_at(body: &[u8], line: usize, column: usize) -> String {
    if line == 0 {
        return ".".to_owned();
    }
    let line_start = match line {
        1 => 0,
        _ => body.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(line - 2).map_or(body.len(), |(i, _)| i + 1),
    };
    let end = (line_start + column).min(body.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match body[i] {
            b'{' => stack.push(Frame::Object { key: None, in_value: false }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => drop(stack.pop()),
            b':' => {
                if let Some(Frame::Object { in_value, .. }) = stack.last_mut() {
                    *in_value = true;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { key, in_value }) => (*key, *in_value) = (None, false),
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            b'"' => {
                let mut close = i + 1;
                while close < end && body[close] != b'"' {
                    close += if body[close] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object { key: key @ None, in_value: false }) = stack.last_mut() {
                    let raw = &body[i + 1..close.min(end)];
                    let decoded = match raw.contains(&b'\\') {
                        true => body.get(i..=close).and_then(|s| agent_zero_codecs::json::from_slice::<String>(s).ok()),
                        false => None,
                    };
                    *key = Some(decoded.unwrap_or_else(|| String::from_utf8_lossy(raw).into_owned()));
                }
                i = close;
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key), in_value: true } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Array { index } => {
                use std::fmt::Write as _;
                let _ = write!(path, "[{index}]");
            }
            Frame::Object { .. } => {}
        }
    }
    if path.is_empty() { ".".to_owned() } else { path }
}

#[cfg(test)]
mod path_tests {
    //! [`json_path_at`] against `serde_path_to_error` on every field of real
    //! payloads made wrong in each way, pretty and compact.
    use serde::Deserialize;
    use serde_json::{Value, json};

    use crate::event::{IntakeError, parse};
    use crate::payload::{IssuesEvent, PullRequestEvent, ReviewCommentEvent};

    fn compare<T: for<'de> Deserialize<'de>>(body: &[u8]) -> bool {
        let ours = parse::<T>(body).err();
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        // Over the same reading of structs (objects only) as `parse`.
        let objects = agent_zero_codecs::json::Objects(&mut deserializer);
        let theirs = serde_path_to_error::deserialize::<_, T>(objects).err();
        match (ours, theirs) {
            (Some(IntakeError::Json { path, message }), Some(e)) => {
                assert_eq!((path.as_str(), message), (e.path().to_string().as_str(), e.inner().to_string()));
                true
            }
            (None, None) => false,
            (ours, theirs) => panic!("{ours:?} vs {theirs:?}"),
        }
    }

    fn mutate<T: for<'de> Deserialize<'de>>(root: &Value, pointer: &str, node: &Value) {
        let replacements =
            [json!(5), json!("s"), json!(true), json!(null), json!([]), json!({}), json!({"zz": 1}), json!([1])];
        let mut read = false;
        for (n, replacement) in replacements.into_iter().enumerate() {
            let mut changed = root.clone();
            *changed.pointer_mut(pointer).unwrap() = replacement;
            read |= compare::<T>(&serde_json::to_vec_pretty(&changed).unwrap());
            if n < 2 {
                read |= compare::<T>(&serde_json::to_vec(&changed).unwrap());
            }
        }
        if let Some((parent, key)) = pointer.rsplit_once('/') {
            let mut changed = root.clone();
            match changed.pointer_mut(parent).unwrap() {
                Value::Object(map) => drop(map.remove(key)),
                Value::Array(items) => drop(items.remove(key.parse::<usize>().unwrap())),
                _ => unreachable!(),
            }
            compare::<T>(&serde_json::to_vec_pretty(&changed).unwrap());
        }
        if !read {
            return; // a value the type skips, and so everything under it
        }
        let children: Vec<(String, Value)> = match node {
            Value::Object(map) => {
                map.iter().map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v.clone())).collect()
            }
            Value::Array(items) => items.iter().take(2).enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect(),
            _ => Vec::new(),
        };
        for (key, child) in children {
            mutate::<T>(root, &format!("{pointer}/{key}"), &child);
        }
    }

    fn fixture(event: &str, name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/github-webhooks")
            .join(event)
            .join(name);
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn paths_match_serde_path_to_error() {
        let pr = fixture("pull_request", "opened.payload.json");
        for (key, value) in pr.as_object().unwrap() {
            mutate::<PullRequestEvent>(&pr, &format!("/{key}"), value);
        }
        let issue = fixture("issues", "labeled.payload.json");
        for (key, value) in issue.as_object().unwrap() {
            mutate::<IssuesEvent>(&issue, &format!("/{key}"), value);
        }
        let comment = fixture("pull_request_review_comment", "created.payload.json");
        for (key, value) in comment.as_object().unwrap() {
            mutate::<ReviewCommentEvent>(&comment, &format!("/{key}"), value);
        }
        for body in
            [&b"{\"a\\u0062\": {\"x\": 1}, \"pull_request\": 5}"[..], b"[1,", b"{\"pull_request\": {\"head\": ", b"  "]
        {
            compare::<PullRequestEvent>(body);
        }
    }
}
