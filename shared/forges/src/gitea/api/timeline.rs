//! An issue's label changes, from its timeline (`GET .../issues/{index}/timeline`,
//! `issueGetCommentsAndTimeline` in Gitea 1.22's swagger). Gitea's
//! `label_updated` delivery says only that an issue's labels changed, not
//! which: the timeline says. Gitea writes one `label` event per label added
//! (`body` `"1"`) or removed (`body` empty), with its doer, whether a label
//! was set when the issue was opened or later.

use agent_zero_ports::HttpClient;
use serde::Deserialize;

use super::{GiteaClient, GiteaError, Label, User, repo_path};

/// One event of an issue's timeline, as the label rule reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TimelineEvent {
    /// `comment`, `label`, `close`, ...
    #[serde(rename = "type", default)]
    pub kind: String,
    /// For a `label` event: `"1"` when the label was added.
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub label: Option<Label>,
    #[serde(default)]
    pub created_at: String,
}

impl TimelineEvent {
    /// A label change by `login` (case-insensitive, as Gitea's logins are).
    pub fn labelled_by(&self, login: &str) -> bool {
        self.kind == "label" && self.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(login))
    }

    /// The label this event added, if it added one.
    pub fn added_label(&self) -> Option<&str> {
        (self.kind == "label" && self.body == "1").then_some(()).and(self.label.as_ref()).map(|l| l.name.as_str())
    }
}

/// An issue's timeline, oldest first, and whether it was read to its end.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub events: Vec<TimelineEvent>,
    /// `false` when more pages exist than are read: the newest
    /// events were not read.
    pub whole: bool,
}

impl Timeline {
    /// The labels `login`'s newest label change left added: its label
    /// events are those by `login` sharing the newest one's time (one
    /// change in Gitea's UI may add and remove several; Gitea's times are
    /// whole seconds), and of a label changed twice in it the later event
    /// counts. `None` when `login` changed no label.
    pub fn newest_added_by(&self, login: &str) -> Option<Vec<String>> {
        let by: Vec<&TimelineEvent> = self.events.iter().filter(|e| e.labelled_by(login)).collect();
        let newest = by.last()?.created_at.as_str();
        let mut net: Vec<(&str, bool)> = Vec::new();
        for event in by.iter().filter(|e| e.created_at == newest) {
            let Some(label) = event.label.as_ref().map(|l| l.name.as_str()) else { continue };
            let added = event.added_label().is_some();
            match net.iter_mut().find(|(name, _)| *name == label) {
                Some(entry) => entry.1 = added,
                None => net.push((label, added)),
            }
        }
        Some(net.into_iter().filter(|(_, added)| *added).map(|(name, _)| name.to_owned()).collect())
    }
}

impl<H: HttpClient> GiteaClient<'_, H> {
    /// Issue `number`'s timeline, oldest first (as many pages as are read).
    pub async fn timeline(&self, owner: &str, repo: &str, number: u64) -> Result<Timeline, GiteaError> {
        let base = format!("/repos/{}/issues/{number}/timeline", repo_path(owner, repo)?);
        let (events, whole) = self.pages("list issue timeline", &base).await?;
        Ok(Timeline { events, whole })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, login: &str, label: &str, added: bool, at: &str) -> TimelineEvent {
        TimelineEvent {
            kind: kind.into(),
            body: if added { "1".into() } else { String::new() },
            user: Some(User { login: login.into() }),
            label: Some(Label { name: label.into() }),
            created_at: at.into(),
        }
    }

    #[test]
    fn the_newest_change_by_the_sender_is_what_was_added() {
        let timeline = Timeline {
            events: vec![
                event("label", "ann", "agent-zero", true, "2026-12-07T10:00:00Z"),
                event("comment", "ann", "", true, "2026-12-07T10:01:00Z"),
                event("label", "bob", "agent-zero", true, "2026-12-07T10:02:00Z"),
                event("label", "ann", "bug", true, "2026-12-07T10:03:00Z"),
                event("label", "ann", "wontfix", false, "2026-12-07T10:03:00Z"),
                event("label", "ann", "docs", true, "2026-12-07T10:03:00Z"),
            ],
            whole: true,
        };
        assert_eq!(timeline.newest_added_by("ANN"), Some(vec!["bug".to_owned(), "docs".to_owned()]));
        assert_eq!(timeline.newest_added_by("bob"), Some(vec!["agent-zero".to_owned()]));
        assert_eq!(timeline.newest_added_by("carol"), None);
        // A change that only removed labels added none; one that added a
        // label and took it off within its second left none added.
        let removed = Timeline { events: vec![event("label", "ann", "bug", false, "t")], whole: true };
        assert_eq!(removed.newest_added_by("ann"), Some(vec![]));
        let undone = Timeline {
            events: vec![event("label", "ann", "bug", true, "t"), event("label", "ann", "bug", false, "t")],
            whole: true,
        };
        assert_eq!(undone.newest_added_by("ann"), Some(vec![]));
        let readded = Timeline {
            events: vec![event("label", "ann", "az", false, "t"), event("label", "ann", "az", true, "t")],
            whole: true,
        };
        assert_eq!(readded.newest_added_by("ann"), Some(vec!["az".to_owned()]));
    }

    #[test]
    fn the_timeline_reads_as_gitea_writes_it() {
        // The shape of `TimelineComment` in Gitea 1.22's swagger, as
        // `convert.ToTimelineComment` fills it for a label added.
        let raw = r#"[{"id":7,"type":"label","body":"1","user":{"login":"ann","id":1},
            "label":{"id":3,"name":"agent-zero","color":"e11d21"},"created_at":"2026-12-07T10:00:00+01:00",
            "updated_at":"2026-12-07T10:00:00+01:00","html_url":"","issue_url":"","pull_request_url":""}]"#;
        let events: Vec<TimelineEvent> = serde_json::from_str(raw).unwrap();
        assert_eq!(events[0].added_label(), Some("agent-zero"));
        assert!(events[0].labelled_by("Ann"));
    }
}
