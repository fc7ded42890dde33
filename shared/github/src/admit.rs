//! Whether a repository's policy turns a parsed delivery into a task: the
//! switches of each gate (`proactive.enabled`, `issues.*`), and the author
//! rules (`triggers.*`): who may start a run, whose pull request may be
//! reviewed, and which label opts one in. Pure: a parsed and the policy's
//! values in, a reason out.

use crate::intake::{Author, IgnoreReason, ParsedDelivery, PolicyGate, Subject};

/// The policy values a parsed is checked against, read by the caller from
/// `.agent-zero.yml` on the default branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicySwitches<'a> {
    pub proactive_enabled: bool,
    pub issues_enabled: bool,
    pub issues_require_label: &'a str,
    /// `triggers.authorAssociations`: whose feedback and issues start a run.
    pub author_associations: &'a [String],
    /// `triggers.allowedBots`: bot logins whose feedback is validated.
    pub allowed_bots: &'a [String],
    /// `triggers.optInLabel`: a pull request carrying it passes the author
    /// gate whoever opened it; empty opts nothing in.
    pub opt_in_label: &'a str,
}

impl PolicySwitches<'_> {
    /// Whether `author` may start a run on its own account: a listed bot,
    /// or a person whose association is listed (`NONE` when unknown).
    fn allows(&self, author: &Author) -> bool {
        if author.bot {
            return self.allowed_bots.iter().any(|b| b.eq_ignore_ascii_case(&author.login));
        }
        let association = author.association.as_deref().unwrap_or("NONE");
        self.author_associations.iter().any(|a| a.eq_ignore_ascii_case(association))
    }

    /// `triggers.optInLabel`, trimmed; `None` when empty.
    fn opt_in(&self) -> Option<&str> {
        Some(self.opt_in_label.trim()).filter(|label| !label.is_empty())
    }
}

impl ParsedDelivery {
    /// Whether the repository's policy turns this parsed into a task; the
    /// reason it does not otherwise.
    pub fn admit(&self, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        self.admit_gate(policy)?;
        self.admit_author(policy)
    }

    /// Whether the pull request carries `triggers.optInLabel`.
    fn opted_in(&self, policy: &PolicySwitches<'_>) -> bool {
        let Some(label) = policy.opt_in() else { return false };
        matches!(self.subject, Subject::PullRequest(_)) && self.labels.iter().any(|l| l.eq_ignore_ascii_case(label))
    }

    /// Who may start a run: an allowed bot, someone who vouched for the
    /// issue by labelling it, or an author whose association policy allows;
    /// for a proactive review (whose author is the opener), any opener of
    /// a pull request someone opted in. An allowed bot speaks for nobody
    /// else: on a pull request whose opener would be refused, its text
    /// starts a run only once the pull request is opted in.
    fn admit_author(&self, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        let Some(author) = &self.author else { return Ok(()) };
        let opens = matches!(self.gate, PolicyGate::Proactive | PolicyGate::OptIn { .. });
        if opens && self.opted_in(policy) {
            return Ok(());
        }
        if author.bot {
            if !policy.allows(author) {
                return Err(IgnoreReason::BotAuthor { login: author.login.clone() });
            }
            return self.admit_opener(author, policy);
        }
        if self.vouched_by.is_some() || policy.allows(author) {
            return Ok(());
        }
        Err(IgnoreReason::AuthorNotAllowed {
            login: author.login.clone(),
            association: author.association.as_deref().unwrap_or("NONE").to_owned(),
            allowed: policy.author_associations.join(", "),
        })
    }

    /// An allowed bot's text on a pull request: its opener passes the
    /// author rules, or the pull request is opted in. A payload that does
    /// not say how the opener relates to the repository leaves it at that.
    fn admit_opener(&self, bot: &Author, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        let Some(opener) = self.opener.as_ref().filter(|o| o.association.is_some() || o.bot) else { return Ok(()) };
        if policy.allows(opener) || self.opted_in(policy) {
            return Ok(());
        }
        Err(IgnoreReason::OpenerNotAllowed {
            login: bot.login.clone(),
            opener: opener.login.clone(),
            association: opener.association.as_deref().unwrap_or("NONE").to_owned(),
            opt_in: policy.opt_in_label.trim().to_owned(),
        })
    }

    fn admit_gate(&self, policy: &PolicySwitches<'_>) -> Result<(), IgnoreReason> {
        match &self.gate {
            PolicyGate::Feedback | PolicyGate::Command { .. } => Ok(()),
            PolicyGate::Proactive | PolicyGate::OptIn { .. } if !policy.proactive_enabled => {
                Err(IgnoreReason::ProactiveDisabled)
            }
            PolicyGate::Proactive => Ok(()),
            PolicyGate::OptIn { added_label } => match policy.opt_in() {
                Some(label) if added_label.eq_ignore_ascii_case(label) => Ok(()),
                Some(label) => {
                    Err(IgnoreReason::NotOptInLabel { added: added_label.clone(), opt_in: label.to_owned() })
                }
                None => Err(IgnoreReason::OptInDisabled { added: added_label.clone() }),
            },
            PolicyGate::IssueLabel { .. } if !policy.issues_enabled => Err(IgnoreReason::IssuesDisabled),
            PolicyGate::IssueLabel { labels, added_label } => {
                let required = policy.issues_require_label.trim();
                let matches = |label: &str| required.is_empty() || label.eq_ignore_ascii_case(required);
                match added_label {
                    Some(added) if matches(added) => Ok(()),
                    Some(added) => {
                        Err(IgnoreReason::OtherLabelAdded { added: added.clone(), required: required.to_owned() })
                    }
                    None if labels.iter().any(|l| matches(l)) => Ok(()),
                    None => Err(IgnoreReason::MissingRequiredLabel { required: required.to_owned() }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_contracts::{IssueRef, PullRequestRef, Trigger, UntrustedText};

    use super::*;
    use crate::intake::{Repository, Subject};

    fn issue_gate(labels: &[&str], added: Option<&str>) -> ParsedDelivery {
        ParsedDelivery {
            trigger: Trigger::Issue,
            delivery_id: "d".into(),
            event: "issues".into(),
            action: "opened".into(),
            repository: Repository { owner: "o".into(), repo: "r".into(), default_branch: None },
            installation_id: None,
            sender: "s".into(),
            subject: Subject::Issue(IssueRef {
                owner: "o".into(),
                repo: "r".into(),
                number: 1,
                title: UntrustedText::capped("t", 10),
                url: None,
            }),
            title: None,
            body: None,
            feedback: vec![],
            requested_changes: false,
            gate: PolicyGate::IssueLabel {
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                added_label: added.map(str::to_owned),
            },
            author: None,
            vouched_by: None,
            labels: vec![],
            opener: None,
            event_at_ms: None,
        }
    }

    const MAINTAINERS: &[String] = &[];
    const ON: PolicySwitches<'static> = PolicySwitches {
        proactive_enabled: true,
        issues_enabled: true,
        issues_require_label: "agent-zero",
        author_associations: MAINTAINERS,
        allowed_bots: MAINTAINERS,
        opt_in_label: "agent-zero",
    };

    fn author(login: &str, association: Option<&str>, bot: bool) -> Option<Author> {
        Some(Author { login: login.into(), association: association.map(str::to_owned), bot })
    }

    #[test]
    fn only_allowed_authors_start_runs() {
        let associations: Vec<String> = ["OWNER", "MEMBER", "COLLABORATOR"].map(String::from).to_vec();
        let bots = vec!["coderabbitai[bot]".to_owned()];
        let policy = PolicySwitches { author_associations: &associations, allowed_bots: &bots, ..ON };
        let mut parsed = issue_gate(&[], None);
        parsed.gate = PolicyGate::Feedback;
        for association in ["OWNER", "MEMBER", "COLLABORATOR", "member"] {
            parsed.author = author("maintainer", Some(association), false);
            assert_eq!(parsed.admit(&policy), Ok(()), "{association}");
        }
        for association in [Some("CONTRIBUTOR"), Some("NONE"), Some("FIRST_TIME_CONTRIBUTOR"), None] {
            parsed.author = author("outsider", association, false);
            let refused = parsed.admit(&policy).unwrap_err();
            assert_eq!(refused.code(), "author-not-allowed", "{association:?}");
            let message = refused.to_string();
            assert!(message.contains("outsider") && message.contains("triggers.authorAssociations"), "{message}");
        }
        // Bots: only the listed ones, whatever their association.
        parsed.author = author("CodeRabbitAI[bot]", Some("NONE"), true);
        assert_eq!(parsed.admit(&policy), Ok(()));
        parsed.author = author("dependabot[bot]", Some("OWNER"), true);
        assert_eq!(parsed.admit(&policy), Err(IgnoreReason::BotAuthor { login: "dependabot[bot]".into() }));
        // Someone else labelling an outsider's issue vouches for it.
        let mut issue = issue_gate(&["agent-zero"], Some("agent-zero"));
        issue.author = author("outsider", Some("NONE"), false);
        assert_eq!(issue.admit(&policy).unwrap_err().code(), "author-not-allowed");
        issue.vouched_by = Some("maintainer".into());
        assert_eq!(issue.admit(&policy), Ok(()));
        // The gate is checked first: a disabled feature says so, not who asked.
        let off = PolicySwitches { issues_enabled: false, ..policy };
        assert_eq!(issue.admit(&off), Err(IgnoreReason::IssuesDisabled));
        // Widened by policy.
        let everyone: Vec<String> = vec!["NONE".into(), "CONTRIBUTOR".into()];
        parsed.author = author("outsider", Some("CONTRIBUTOR"), false);
        assert_eq!(parsed.admit(&PolicySwitches { author_associations: &everyone, ..policy }), Ok(()));
    }

    #[test]
    fn issue_gate_needs_enabled_and_the_label() {
        assert_eq!(issue_gate(&["bug", "Agent-Zero"], None).admit(&ON), Ok(()));
        assert_eq!(
            issue_gate(&["bug"], None).admit(&ON),
            Err(IgnoreReason::MissingRequiredLabel { required: "agent-zero".into() })
        );
        let off = PolicySwitches { issues_enabled: false, ..ON };
        assert_eq!(issue_gate(&["agent-zero"], None).admit(&off), Err(IgnoreReason::IssuesDisabled));
        assert_eq!(issue_gate(&["agent-zero", "bug"], Some("agent-zero")).admit(&ON), Ok(()));
        assert_eq!(
            issue_gate(&["agent-zero", "bug"], Some("bug")).admit(&ON),
            Err(IgnoreReason::OtherLabelAdded { added: "bug".into(), required: "agent-zero".into() })
        );
    }

    #[test]
    fn proactive_and_feedback_gates() {
        let mut parsed = issue_gate(&[], None);
        parsed.gate = PolicyGate::Proactive;
        assert_eq!(parsed.admit(&ON), Ok(()));
        let off = PolicySwitches { proactive_enabled: false, ..ON };
        assert_eq!(parsed.admit(&off), Err(IgnoreReason::ProactiveDisabled));
        parsed.gate = PolicyGate::Feedback;
        let all_off =
            PolicySwitches { proactive_enabled: false, issues_enabled: false, issues_require_label: "", ..ON };
        assert_eq!(parsed.admit(&all_off), Ok(()));
    }

    fn pull_request(gate: PolicyGate, author: Option<Author>, labels: &[&str]) -> ParsedDelivery {
        let mut parsed = issue_gate(&[], None);
        parsed.subject = Subject::PullRequest(PullRequestRef {
            owner: "o".into(),
            repo: "r".into(),
            number: 7,
            head_sha: String::new(),
            base_sha: None,
        });
        parsed.gate = gate;
        parsed.author = author;
        parsed.labels = labels.iter().map(|l| (*l).to_owned()).collect();
        parsed
    }

    fn maintainers() -> Vec<String> {
        ["OWNER", "MEMBER", "COLLABORATOR"].map(String::from).to_vec()
    }

    #[test]
    fn the_opt_in_label_lets_an_outsiders_pull_request_through() {
        let associations = maintainers();
        let policy = PolicySwitches { author_associations: &associations, ..ON };
        let outsider = author("drive-by", Some("FIRST_TIME_CONTRIBUTOR"), false);
        let plain = pull_request(PolicyGate::Proactive, outsider.clone(), &["bug"]);
        assert_eq!(plain.admit(&policy).unwrap_err().code(), "author-not-allowed");
        // Carrying the label (any case), each push of the pull request runs.
        let labelled = pull_request(PolicyGate::Proactive, outsider.clone(), &["bug", "Agent-Zero"]);
        assert_eq!(labelled.admit(&policy), Ok(()));
        // Still only under proactive.enabled.
        let off = PolicySwitches { proactive_enabled: false, ..policy };
        assert_eq!(labelled.admit(&off), Err(IgnoreReason::ProactiveDisabled));
        // An empty optInLabel opts nothing in.
        let none = PolicySwitches { opt_in_label: "", ..policy };
        assert_eq!(labelled.admit(&none).unwrap_err().code(), "author-not-allowed");
        let spaces = PolicySwitches { opt_in_label: "  ", ..policy };
        assert_eq!(labelled.admit(&spaces).unwrap_err().code(), "author-not-allowed");
        // An unlisted bot's pull request, opted in by a person, runs too.
        let bot = pull_request(PolicyGate::Proactive, author("renovate[bot]", Some("NONE"), true), &["agent-zero"]);
        assert_eq!(bot.admit(&policy), Ok(()));

        // Adding the label starts a review; adding another label starts none.
        let added = |label: &str| {
            pull_request(PolicyGate::OptIn { added_label: label.into() }, outsider.clone(), &[label, "bug"])
        };
        assert_eq!(added("agent-zero").admit(&policy), Ok(()));
        assert_eq!(
            added("bug").admit(&policy),
            Err(IgnoreReason::NotOptInLabel { added: "bug".into(), opt_in: "agent-zero".into() })
        );
        assert_eq!(added("agent-zero").admit(&none), Err(IgnoreReason::OptInDisabled { added: "agent-zero".into() }));
        assert_eq!(added("agent-zero").admit(&off), Err(IgnoreReason::ProactiveDisabled));
        let message = added("bug").admit(&policy).unwrap_err().to_string();
        assert!(message.contains("triggers.optInLabel"), "{message}");
        // A collaborator's pull request labelled: an explicit request, so it runs.
        let collaborator = author("maintainer", Some("MEMBER"), false);
        let mut theirs = added("agent-zero");
        theirs.author = collaborator;
        assert_eq!(theirs.admit(&policy), Ok(()));
    }

    #[test]
    fn an_allowed_bots_feedback_needs_the_opener_to_pass_or_the_opt_in() {
        let associations = maintainers();
        let bots = vec!["coderabbitai[bot]".to_owned()];
        let policy = PolicySwitches { author_associations: &associations, allowed_bots: &bots, ..ON };
        let rabbit = author("coderabbitai[bot]", Some("NONE"), true);
        let mut feedback = pull_request(PolicyGate::Feedback, rabbit.clone(), &[]);
        // No opener in the payload (a record from before): as before.
        assert_eq!(feedback.admit(&policy), Ok(()));
        feedback.opener = author("drive-by", Some("CONTRIBUTOR"), false);
        let refused = feedback.admit(&policy).unwrap_err();
        assert_eq!(
            refused,
            IgnoreReason::OpenerNotAllowed {
                login: "coderabbitai[bot]".into(),
                opener: "drive-by".into(),
                association: "CONTRIBUTOR".into(),
                opt_in: "agent-zero".into(),
            }
        );
        assert!(refused.to_string().contains("triggers.optInLabel (`agent-zero`)"), "{refused}");
        feedback.labels = vec!["AGENT-ZERO".into()];
        assert_eq!(feedback.admit(&policy), Ok(()), "opted in");
        feedback.labels.clear();
        // A collaborator's pull request, or an allowed bot's: as before.
        feedback.opener = author("maintainer", Some("COLLABORATOR"), false);
        assert_eq!(feedback.admit(&policy), Ok(()));
        feedback.opener = author("CodeRabbitAI[bot]", Some("NONE"), true);
        assert_eq!(feedback.admit(&policy), Ok(()));
        feedback.opener = author("dependabot[bot]", Some("CONTRIBUTOR"), true);
        assert_eq!(feedback.admit(&policy).unwrap_err().code(), "opener-not-allowed");
        // An opener without an association in the payload: nothing to go on.
        feedback.opener = author("ghost", None, false);
        assert_eq!(feedback.admit(&policy), Ok(()));
        // The same for an allowed bot's command.
        let mut command = pull_request(
            PolicyGate::Command { command: crate::ReviewCommand::Review, mention: None, comment_id: None },
            rabbit,
            &[],
        );
        command.opener = author("drive-by", Some("NONE"), false);
        assert_eq!(command.admit(&policy).unwrap_err().code(), "opener-not-allowed");
        // A person's feedback on an outsider's pull request is theirs: as before.
        let mut person = pull_request(PolicyGate::Feedback, author("maintainer", Some("OWNER"), false), &[]);
        person.opener = author("drive-by", Some("NONE"), false);
        assert_eq!(person.admit(&policy), Ok(()));
        // The label opts the pull request in, not every outsider who writes on it.
        let mut outsider = pull_request(PolicyGate::Feedback, author("drive-by", Some("NONE"), false), &["agent-zero"]);
        outsider.opener = author("drive-by", Some("NONE"), false);
        assert_eq!(outsider.admit(&policy).unwrap_err().code(), "author-not-allowed");
    }
}
