//! Drives tasks through the tick engine to every terminal state.

mod harness;

use agent_zero_contracts::{ChangeRisk, RunMode, TaskState, TerminalState, Verdict};
use agent_zero_engine::{ApprovalDecision, Fact, ModelOutcome, Resident, TaskError, TickOutcome, WriteOutcome};
use agent_zero_ports::{Clock, KeyValue as _};
use harness::*;

fn refusal_code(r: &Resident) -> Option<String> {
    match &r.attempt.write {
        Some(WriteOutcome::Refused { refusal } | WriteOutcome::NeedsHuman { refusal }) => Some(refusal.code.clone()),
        _ => None,
    }
}

fn path(r: &Resident) -> Vec<TaskState> {
    r.path.clone()
}

#[test]
fn accepted_fix_completes_verified_and_is_published_once() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-ok", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-ok");
    use TaskState::*;
    assert_eq!(
        path(&r),
        [Discovering, Understanding, Validating, Planning, Executing, Verifying, Reviewing, Completed]
    );
    let (result, evidence) = &**r.conclusion.concluded.as_ref().unwrap();
    assert!(result.verified && evidence.verified);
    assert_eq!(result.changed_files, ["src/lib.rs"]);
    assert_eq!(result.attempts, 1);
    assert_eq!(result.usage.input_tokens, 100);
    assert!(result.summary.ends_with("(api:tester)"), "{}", result.summary);
    assert_eq!(h.workspace.tree.borrow()["src/lib.rs"], FIXED);
    assert_eq!(h.decider.calls(), 1);
    assert_eq!((h.workspace.leases.get(), h.workspace.releases.get()), (1, 1));
    assert_eq!(*h.publisher.published.borrow(), [("t-ok".to_owned(), TerminalState::Completed, true)]);
    assert!(h.keys("pending/").is_empty(), "{:?}", h.keys("pending/"));
    // The first request shows the model the untrusted input as data.
    let request = &h.decider.requests.borrow()[0];
    assert!(request.context.contains("src/lib.rs") && request.previous_violation.is_none());
}

#[test]
fn each_report_carries_the_task_as_committed_and_entry_0_reads_alone() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    let created = stimulus("t-report", RunMode::Fix, policy(FIX_POLICY));
    h.run(created.clone());
    // Every committing tick hands back exactly what the log folds to at its seq.
    let reports = h.reports.borrow();
    assert!(reports.len() > 3, "{}", reports.len());
    for report in reports.iter() {
        let after = report.resident.as_ref().expect("no tick of a lone delivery is stale");
        let seq = after.seq.expect("folded");
        let entries: Vec<_> = (0..=seq)
            .map(|at| {
                let key = agent_zero_engine::log_key("t-report", at);
                serde_json::from_slice(&block_on(h.kv.get(&key)).unwrap().unwrap()).unwrap()
            })
            .collect();
        assert_eq!(after, &agent_zero_engine::fold(&entries).unwrap(), "seq {seq}");
    }
    // Folded *through* the tick's commit: the first tick's report is at seq 1.
    assert_eq!(reports[0].resident.as_ref().and_then(|r| r.seq), Some(1));
    assert_eq!(reports.last().unwrap().resident.as_ref(), Some(&h.load("t-report")));
    // The stimulus alone: entry 0, as created.
    let read = block_on(agent_zero_engine::stimulus(&h.kv, "t-report")).unwrap().unwrap();
    assert_eq!(read, created);
    assert!(block_on(agent_zero_engine::stimulus(&h.kv, "t-none")).unwrap().is_none());
    assert!(matches!(block_on(agent_zero_engine::stimulus(&h.kv, "bad id")), Err(TaskError::InvalidTaskId(_))));
}

#[test]
fn observe_mode_reports_without_writing() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-obs", RunMode::Observe, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-obs");
    assert_eq!(refusal_code(&r).as_deref(), Some("mode-read-only"));
    assert_eq!(h.workspace.writes.get(), 0);
    let (result, evidence) = &**r.conclusion.concluded.as_ref().unwrap();
    assert_eq!(result.verdict, Verdict::Accepted);
    assert!(!result.verified);
    assert_eq!(evidence.refusal.as_ref().unwrap().code, "mode-read-only");
}

#[test]
fn rejected_findings_record_every_reason() {
    type Mutation = Box<dyn Fn(&mut agent_zero_contracts::ModelFinding)>;
    let cases: Vec<(&str, Mutation, &str)> = vec![
        ("invalid", Box::new(|f| f.valid = false), "could not support"),
        ("no-evidence", Box::new(|f| f.evidence.clear()), "No evidence was cited"),
        ("no-file", Box::new(|f| f.files.clear()), "does not name any repository file"),
        ("missing-file", Box::new(|f| f.files = vec!["src/missing.rs".into()]), "None of the cited files exist"),
        ("bad-quote", Box::new(|f| f.evidence = vec!["`fn multiply(x: u8)`".into()]), "does not appear"),
        (
            "outside",
            Box::new(|f| f.files = vec!["../etc/passwd".into(), "src/lib.rs".into()]),
            "not inside the checkout",
        ),
        ("confidence", Box::new(|f| f.confidence = 1.5), "outside 0 to 1"),
    ];
    for (name, mutate, needle) in cases {
        let h = Harness::new();
        let mut finding = claim();
        mutate(&mut finding);
        h.decider.push(decision(finding));
        let id = format!("t-rej-{name}");
        let outcome = h.run(stimulus(&id, RunMode::Fix, policy(FIX_POLICY)));
        assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)), "{name}");
        let r = h.load(&id);
        let finding = r.attempt.finding.as_ref().unwrap();
        assert_eq!(finding.verdict, Verdict::Rejected, "{name}");
        assert!(
            finding.rejection_reasons.iter().any(|m| m.contains(needle)),
            "{name}: {:?}",
            finding.rejection_reasons
        );
        assert_eq!(r.path.last(), Some(&TaskState::Completed));
        assert!(!r.path.contains(&TaskState::Planning), "{name}: a rejected claim is never planned");
        assert_eq!(h.workspace.writes.get(), 0, "{name}");
    }
    // All reasons are collected, not only the first.
    let h = Harness::new();
    let mut finding = claim();
    finding.valid = false;
    finding.evidence.clear();
    finding.files.clear();
    h.decider.push(decision(finding));
    h.run(stimulus("t-rej-all", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(h.load("t-rej-all").attempt.finding.unwrap().rejection_reasons.len(), 3);
}

#[test]
fn low_confidence_is_inconclusive_and_waits_for_a_person_without_writing() {
    let h = Harness::new();
    let mut finding = claim();
    finding.confidence = 0.4;
    h.decider.push(decision(finding));
    let outcome = h.run(stimulus("t-inc", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Waiting));
    let r = h.load("t-inc");
    assert_eq!(r.state, TaskState::NeedsHuman);
    assert_eq!(r.attempt.finding.as_ref().unwrap().verdict, Verdict::Inconclusive);
    assert_eq!(r.conclusion.concluded.as_ref().unwrap().0.verdict, Verdict::Inconclusive);
    assert_eq!(h.workspace.writes.get(), 0);
}

#[test]
fn each_link_of_the_write_chain_is_a_distinct_recorded_refusal() {
    struct Case {
        code: &'static str,
        mode: RunMode,
        yaml: &'static str,
        isolated: bool,
        confidence: f64,
        risk: ChangeRisk,
        extra_change: Option<&'static str>,
        /// Whether the finding cites the extra change's path too.
        cite_extra: bool,
        /// Whether its evidence quotes the extra path's content, so that
        /// file earns scope on its own.
        quote_extra: bool,
        expect: TerminalState,
    }
    let base = Case {
        code: "",
        mode: RunMode::Fix,
        yaml: FIX_POLICY,
        isolated: true,
        confidence: 0.95,
        risk: ChangeRisk::Mechanical,
        extra_change: None,
        cite_extra: false,
        quote_extra: false,
        expect: TerminalState::Completed,
    };
    let cases = [
        Case { code: "mode-read-only", mode: RunMode::Suggest, ..base },
        Case { code: "autofix-disabled", yaml: "mode: fix\nchecks: [[cargo, test]]\n", ..base },
        // As the reference's: a low confidence, a risk or a runner the
        // policy does not allow, and too many files wait for a person.
        Case { code: "confidence-below-threshold", confidence: 0.7, expect: TerminalState::NeedsHuman, ..base },
        // Declared mechanical, but `src/lib.rs` is executable source: behavioral.
        Case {
            code: "change-risk-not-allowed",
            yaml: "mode: fix\nchecks: [[cargo, test]]\nautofix: {enabled: true}\n",
            expect: TerminalState::NeedsHuman,
            ..base
        },
        Case { code: "runner-not-isolated", isolated: false, expect: TerminalState::NeedsHuman, ..base },
        Case {
            code: "too-many-changed-files",
            yaml: "mode: fix\nchecks: [[cargo, test]]\nautofix: {enabled: true, allowedChangeRisks: [mechanical, behavioral]}\nagent: {maxChangedFiles: 1}\n",
            extra_change: Some("Cargo.toml"),
            cite_extra: true,
            quote_extra: true,
            expect: TerminalState::NeedsHuman,
            ..base
        },
        Case { code: "path-outside-checkout", extra_change: Some("../outside.rs"), ..base },
        Case { code: "out-of-scope", extra_change: Some("Cargo.toml"), expect: TerminalState::NeedsHuman, ..base },
        // Cited and present, but none of the claim's quotes is in it: the
        // quote in `src/lib.rs` earns that file only.
        Case {
            code: "out-of-scope",
            extra_change: Some("Cargo.toml"),
            cite_extra: true,
            expect: TerminalState::NeedsHuman,
            ..base
        },
        // Cited, but not at the leased commit: a new file has no evidence.
        Case {
            code: "out-of-scope",
            extra_change: Some("src/new.rs"),
            cite_extra: true,
            expect: TerminalState::NeedsHuman,
            ..base
        },
        Case {
            code: "no-checks",
            yaml: "mode: fix\nautofix: {enabled: true, allowedChangeRisks: [mechanical, behavioral]}\n",
            expect: TerminalState::NeedsHuman,
            ..base
        },
        Case { code: "high-impact-change", risk: ChangeRisk::HighImpact, expect: TerminalState::NeedsHuman, ..base },
        // Declared mechanical, but a dependency manifest is high-impact whatever the model says.
        Case {
            code: "high-impact-change",
            extra_change: Some("Cargo.toml"),
            cite_extra: true,
            quote_extra: true,
            expect: TerminalState::NeedsHuman,
            ..base
        },
    ];
    for case in cases {
        let mut h = Harness::new();
        h.workspace.isolated = case.isolated;
        if case.code == "no-checks" {
            // Nothing to discover either: no manifest in the checkout.
            h.workspace.original.remove("Cargo.toml");
        }
        let mut finding = claim();
        finding.confidence = case.confidence;
        finding.change_risk = case.risk;
        if let (Some(path), true) = (case.extra_change, case.cite_extra) {
            finding.files.push(path.into());
        }
        if case.quote_extra {
            finding.evidence.push("`name = \"demo\"`".into());
        }
        let ModelOutcome::Decided { mut decision, usage } = decision(finding) else { unreachable!() };
        if let Some(path) = case.extra_change {
            let mut change = decision.changes[0].clone();
            change.path = path.into();
            decision.changes.push(change);
        }
        h.decider.push(ModelOutcome::Decided { decision, usage });
        let id = format!(
            "t-{}-{}-{}",
            case.code,
            case.extra_change.unwrap_or("none").replace(['/', '.'], "-"),
            u8::from(case.cite_extra)
        );
        let outcome = h.run(stimulus(&id, case.mode, policy(case.yaml)));
        let expected = if case.expect == TerminalState::NeedsHuman {
            TickOutcome::Waiting
        } else {
            TickOutcome::Terminal(case.expect)
        };
        assert_eq!(outcome, Some(expected), "{}", case.code);
        let r = h.load(&id);
        assert_eq!(refusal_code(&r).as_deref(), Some(case.code));
        let (result, evidence) = &**r.conclusion.concluded.as_ref().unwrap();
        assert_eq!(evidence.refusal.as_ref().map(|x| x.code.as_str()), Some(case.code));
        assert!(!result.verified, "{}", case.code);
        assert_eq!(h.workspace.writes.get(), 0, "{}: a refused write writes nothing", case.code);
    }
}

#[test]
fn repair_succeeds_on_the_second_attempt() {
    let h = Harness::new();
    h.workspace.exits.borrow_mut().extend([1, 0]);
    h.decider.push(decision(claim()));
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-repair", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-repair");
    let result = &r.conclusion.concluded.as_ref().unwrap().0;
    assert!(result.verified);
    assert_eq!(result.attempts, 2);
    assert_eq!(h.decider.calls(), 2);
    let replan = &h.decider.requests.borrow()[1];
    assert!(replan.context.contains("assertion failed: add(1, 1) == 2"), "{}", replan.context);
    assert!(r.path.windows(2).any(|w| w == [TaskState::Verifying, TaskState::Planning]));
}

#[test]
fn used_up_repairs_wait_for_a_person_with_the_reason() {
    let h = Harness::new();
    h.workspace.exits.borrow_mut().extend([1, 1, 1]);
    for _ in 0..3 {
        h.decider.push(decision(claim()));
    }
    let outcome =
        h.run(stimulus("t-exhaust", RunMode::Fix, policy(&format!("{FIX_POLICY}agent: {{maxAttempts: 2}}\n"))));
    assert_eq!(outcome, Some(TickOutcome::Waiting));
    let r = h.load("t-exhaust");
    assert_eq!(r.state, TaskState::NeedsHuman);
    assert_eq!(r.conclusion.failure, None, "nothing failed: a person decides");
    let evidence = &r.conclusion.concluded.as_ref().unwrap().1;
    let refusal = evidence.refusal.as_ref().expect("the stop is recorded");
    assert_eq!(refusal.code, "repairs-exhausted");
    assert!(refusal.message.contains("verification still fails after 2 attempt(s)"), "{refusal:?}");
    assert_eq!(h.workspace.runs.get(), 2);
    // The first attempt's checks had half of what was left of the run, so
    // a hung check could not take the repair's time; the last had the rest.
    let timeouts = h.workspace.check_timeouts.borrow().clone();
    let run_ms = agent_zero_agent::Policy::default().agent.timeout_ms;
    assert!(timeouts[0] <= run_ms / 2 && timeouts[0] > run_ms / 2 - 60_000, "{timeouts:?}");
    assert!(timeouts[1] > timeouts[0] && timeouts[1] <= run_ms, "{timeouts:?}");
    assert_eq!(h.decider.calls(), 2);
    assert!(!r.conclusion.concluded.as_ref().unwrap().0.verified);
    assert_eq!(h.workspace.releases.get(), 1);
}

#[test]
fn high_impact_waits_for_a_human_then_approval_completes_it() {
    for h in Harness::both() {
        let mut finding = claim();
        finding.change_risk = ChangeRisk::HighImpact;
        h.decider.push(decision(finding));
        assert_eq!(h.run(stimulus("t-hi", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
        assert_eq!(h.load("t-hi").state, TaskState::NeedsHuman);
        assert_eq!(h.workspace.releases.get(), 1, "the sandbox is not held while a person decides");
        let tick = block_on(agent_zero_engine::approve(
            &h.kv,
            &h.queue,
            "t-hi",
            "alice",
            ApprovalDecision::Approve,
            None,
            None,
            START_MS + 5_000,
        ))
        .unwrap();
        assert_eq!(h.queue.messages.borrow().front().map(|(t, _)| t), Some(&tick));
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
        let r = h.load("t-hi");
        assert!(r.conclusion.concluded.as_ref().unwrap().0.verified);
        assert!(r.events.iter().any(|e| e.message == "approved by alice"));
        assert_eq!(h.workspace.leases.get(), 2, "a fresh lease after approval");
        let published = h.publisher.published.borrow();
        assert_eq!(
            published.iter().map(|p| p.1).collect::<Vec<_>>(),
            [TerminalState::NeedsHuman, TerminalState::Completed]
        );
        drop(published);
        // Deciding a task that is not waiting is a conflict.
        let again = block_on(agent_zero_engine::approve(
            &h.kv,
            &h.queue,
            "t-hi",
            "bob",
            ApprovalDecision::Approve,
            None,
            None,
            START_MS,
        ));
        assert!(
            matches!(&again, Err(TaskError::AlreadyDecided { principal, decision: ApprovalDecision::Approve, .. }) if principal == "alice"),
            "a later decision is refused naming the one that won: {again:?}"
        );
        let missing = block_on(agent_zero_engine::approve(
            &h.kv,
            &h.queue,
            "nope",
            "bob",
            ApprovalDecision::Approve,
            None,
            None,
            START_MS,
        ));
        assert!(matches!(missing, Err(TaskError::NotFound(_))));
        assert!(h.keys("pending/").is_empty() && h.keys("active/").is_empty(), "{:?}", h.kv.snapshot().keys());
    }
}

#[test]
fn rejection_by_a_human_fails_the_task_without_writing() {
    let h = Harness::new();
    let mut finding = claim();
    finding.change_risk = ChangeRisk::HighImpact;
    h.decider.push(decision(finding));
    assert_eq!(h.run(stimulus("t-deny", RunMode::Fix, policy(FIX_POLICY))), Some(TickOutcome::Waiting));
    block_on(agent_zero_engine::approve(
        &h.kv,
        &h.queue,
        "t-deny",
        "carol",
        ApprovalDecision::Reject,
        Some("too risky".into()),
        None,
        START_MS + 1,
    ))
    .unwrap();
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("t-deny");
    assert_eq!(r.conclusion.failure.as_deref(), Some("rejected by carol"));
    assert_eq!(h.workspace.writes.get(), 0);
    assert_eq!(h.publisher.published.borrow().len(), 2);
}

#[test]
fn runaway_guard_fails_a_task_that_does_not_converge() {
    let mut h = Harness::new();
    h.limits.max_ticks = 4;
    h.limits.max_sandbox_errors = 100;
    h.workspace.fail_leases.set(1_000);
    let outcome = h.run(stimulus("t-runaway", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("t-runaway");
    assert!(
        r.conclusion.failure.as_deref().unwrap().starts_with("runaway guard: 4 ticks"),
        "{:?}",
        r.conclusion.failure
    );
    assert!(h.reports.borrow().len() <= 6, "{}", h.reports.borrow().len());
}

#[test]
fn overall_timeout_fails_a_stuck_task() {
    let mut h = Harness::new();
    h.tick_cost_ms = 700;
    let outcome =
        h.run(stimulus("t-timeout", RunMode::Fix, policy(&format!("{FIX_POLICY}agent: {{timeoutMs: 2000}}\n"))));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Failed)));
    let r = h.load("t-timeout");
    assert!(r.conclusion.failure.as_deref().unwrap().starts_with("timed out"), "{:?}", r.conclusion.failure);
    assert_eq!(h.workspace.releases.get(), 1);
}

#[test]
fn a_violation_is_shown_to_the_model_and_bounded_by_max_attempts() {
    let h = Harness::new();
    h.decider.push(ModelOutcome::Unusable { violation: "missing field `plan`".into(), usage: Default::default() });
    h.decider.push(decision(claim()));
    assert_eq!(
        h.run(stimulus("t-viol", RunMode::Fix, policy(FIX_POLICY))),
        Some(TickOutcome::Terminal(TerminalState::Completed))
    );
    assert_eq!(h.decider.requests.borrow()[1].previous_violation.as_deref(), Some("missing field `plan`"));

    let h = Harness::new();
    for _ in 0..3 {
        h.decider.push(ModelOutcome::Unusable { violation: "not json".into(), usage: Default::default() });
    }
    assert_eq!(
        h.run(stimulus("t-viol3", RunMode::Fix, policy(FIX_POLICY))),
        Some(TickOutcome::Terminal(TerminalState::Failed))
    );
    assert_eq!(h.decider.calls(), 3);
    assert!(h.load("t-viol3").conclusion.failure.unwrap().contains("not json"));
}

#[test]
fn the_same_tick_delivered_twice_commits_once_and_calls_the_model_once() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-dup", RunMode::Fix, policy(FIX_POLICY)));
    // lease, discover: the next queued tick is the model call.
    for _ in 0..2 {
        let (tick, _) = h.queue.messages.borrow_mut().pop_front().unwrap();
        h.tick(&tick).unwrap();
    }
    let (understand, _) = h.queue.messages.borrow().front().cloned().unwrap();
    let first = h.tick(&understand).unwrap();
    assert!(matches!(first.outcome, TickOutcome::Continue { .. }));
    let entry_before = h.kv.snapshot()[&agent_zero_engine::log_key("t-dup", understand.expected_seq)].clone();
    let second = h.tick(&understand).unwrap();
    assert_eq!(second.outcome, TickOutcome::Stale);
    assert_eq!(second.stats.model_calls + second.stats.kv_writes, 0);
    assert_eq!(h.decider.calls(), 1);
    assert_eq!(h.kv.snapshot()[&agent_zero_engine::log_key("t-dup", understand.expected_seq)], entry_before);
    h.queue.messages.borrow_mut().push_back((understand, 0)); // and once more through the queue
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert_eq!(h.decider.calls(), 1);
}

#[test]
fn a_crash_between_commit_and_enqueue_is_recovered_by_the_sweep() {
    for h in Harness::both() {
        h.decider.push(decision(claim()));
        h.create(stimulus("t-crash", RunMode::Fix, policy(FIX_POLICY)));
        let (tick, _) = h.queue.messages.borrow_mut().pop_front().unwrap();
        h.tick(&tick).unwrap();
        // The host dies right after committing the next tick: its message is lost.
        h.queue.drop_next.set(1);
        match h.drive() {
            Some(TickOutcome::Continue { next, delay_ms: 0 }) => {
                assert_eq!((next.task_id.as_str(), next.expected_seq), ("t-crash", 3));
            }
            other => panic!("{other:?}"),
        }
        assert!(h.queue.messages.borrow().is_empty());
        let sweep = |at| block_on(agent_zero_engine::sweep(&h.kv, &h.queue, at, Default::default())).unwrap();
        assert!(sweep(h.clock.now_ms()).enqueued.is_empty(), "not overdue yet");
        let report = sweep(h.clock.now_ms() + 120_000);
        assert_eq!(report.enqueued, [agent_zero_engine::Tick::new("t-crash", 3)]);
        assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
        assert!(h.keys("pending/").is_empty() && h.keys("active/").is_empty(), "{:?}", h.kv.snapshot().keys());
        assert!(sweep(h.clock.now_ms() + 120_000).enqueued.is_empty(), "nothing left to sweep");
    }

    // Where the checkpoint follows the entry (Spin's store), a crash after
    // the entry but before the checkpoint: it names a committed seq as
    // next, so the sweep delivers the successor of the last entry.
    let h = Harness::one_key_per_request();
    h.decider.push(decision(claim()));
    let first = h.create(stimulus("t-crash2", RunMode::Fix, policy(FIX_POLICY)));
    h.queue.messages.borrow_mut().clear();
    let meta_key = agent_zero_engine::meta_key("t-crash2");
    let before = h.kv.snapshot()[&meta_key].clone();
    h.tick(&first).unwrap();
    h.queue.messages.borrow_mut().clear();
    block_on(agent_zero_ports::KeyValue::put(&h.kv, &meta_key, &before)).unwrap();
    let report =
        block_on(agent_zero_engine::sweep(&h.kv, &h.queue, h.clock.now_ms() + 120_000, Default::default())).unwrap();
    assert_eq!(report.enqueued, [agent_zero_engine::Tick::new("t-crash2", 2)]);
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert!(h.keys("active/").is_empty());

    // A task in flight across the upgrade from `pending/` markers (no
    // `active/` key, its tick lost): the sweep adopts the marker and
    // re-drives the task.
    let h = Harness::one_key_per_request();
    h.decider.push(decision(claim()));
    let first = h.create(stimulus("t-legacy", RunMode::Fix, policy(FIX_POLICY)));
    h.queue.messages.borrow_mut().clear();
    h.tick(&first).unwrap();
    h.queue.messages.borrow_mut().clear();
    block_on(agent_zero_ports::KeyValue::delete(&h.kv, "active/t-legacy")).unwrap();
    block_on(agent_zero_ports::KeyValue::put(&h.kv, &agent_zero_engine::pending_key("t-legacy", 2), br#"{"dueMs":0}"#))
        .unwrap();
    let report =
        block_on(agent_zero_engine::sweep(&h.kv, &h.queue, h.clock.now_ms() + 120_000, Default::default())).unwrap();
    assert_eq!(report.enqueued, [agent_zero_engine::Tick::new("t-legacy", 2)]);
    assert!(h.keys("pending/").is_empty(), "the marker is gone once adopted");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert!(h.keys("active/").is_empty());
    // A sweep that finds no marker left says so, and later sweeps read
    // that instead of listing `pending/` (a list walks the whole store on Spin).
    let sweep = || block_on(agent_zero_engine::sweep(&h.kv, &h.queue, h.clock.now_ms(), Default::default())).unwrap();
    assert_eq!(sweep().stats.kv_lists, 2);
    assert_eq!(h.keys("sweep/"), ["sweep/pending-adopted"]);
    assert_eq!(sweep().stats.kv_lists, 1, "`active/` only");
}

/// Where the checkpoint carries the due time, a tick writes nothing
/// outside its task; what a crash can leave behind is an `active/` key,
/// which the sweep reconciles with the task: removed when the task is
/// quiet or gone, the task's next tick re-driven when its checkpoint is
/// lost.
#[test]
fn the_sweep_reconciles_active_keys_with_their_tasks() {
    let h = Harness::new();
    let sweep = |at| block_on(agent_zero_engine::sweep(&h.kv, &h.queue, at, Default::default())).unwrap();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-done", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(h.keys("active/"), ["active/t-done"]);
    assert!(h.keys("pending/").is_empty(), "no per-tick marker");
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert!(h.keys("active/").is_empty());
    // Left by a crash after the last commit, and one of a task gone.
    block_on(agent_zero_ports::KeyValue::put(&h.kv, "active/t-done", b"")).unwrap();
    block_on(agent_zero_ports::KeyValue::put(&h.kv, "active/t-gone", b"")).unwrap();
    let report = sweep(h.clock.now_ms() + 120_000);
    assert!(report.enqueued.is_empty(), "{report:?}");
    assert!(h.keys("active/").is_empty());
    // One written for a creation or an approval still in flight (the task
    // reads as gone or quiet until its commit lands) stays within the grace.
    let now = h.clock.now_ms();
    block_on(agent_zero_ports::KeyValue::put(&h.kv, "active/t-landing", now.to_string().as_bytes())).unwrap();
    assert!(sweep(now + 1_000).enqueued.is_empty());
    assert_eq!(h.keys("active/"), ["active/t-landing"], "kept while its commit may be in flight");
    sweep(now + 120_000);
    assert!(h.keys("active/").is_empty(), "removed once older than the grace");

    // A running task whose checkpoint is lost: its next tick is found by
    // probing the log, and the run completes.
    h.decider.push(decision(claim()));
    let mut tick = h.create(stimulus("t-lost", RunMode::Fix, policy(FIX_POLICY)));
    h.queue.messages.borrow_mut().clear();
    for _ in 0..2 {
        match h.tick(&tick).unwrap().outcome {
            TickOutcome::Continue { next, .. } => tick = next,
            other => panic!("{other:?}"),
        }
    }
    h.queue.messages.borrow_mut().clear();
    block_on(agent_zero_ports::KeyValue::delete(&h.kv, &agent_zero_engine::meta_key("t-lost"))).unwrap();
    let report = sweep(h.clock.now_ms() + 120_000);
    // The sweep's re-drive says nothing of the step: no claim ahead.
    assert_eq!(report.enqueued, [agent_zero_engine::Tick::new(tick.task_id, tick.expected_seq)]);
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert!(h.keys("active/").is_empty());
}

#[test]
fn a_kv_write_failure_mid_tick_leaves_the_task_resumable() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.decider.push(decision(claim()));
    h.create(stimulus("t-kvfail", RunMode::Fix, policy(FIX_POLICY)));
    for _ in 0..2 {
        let (tick, _) = h.queue.messages.borrow_mut().pop_front().unwrap();
        h.tick(&tick).unwrap();
    }
    let (understand, _) = h.queue.messages.borrow_mut().pop_front().unwrap();
    h.kv.set_fault(Some(agent_zero_ports::MemoryKvFault::Writes));
    let failed = h.tick(&understand);
    assert!(matches!(failed, Err(agent_zero_engine::TickError::Store(_))), "{failed:?}");
    assert_eq!(h.decider.calls(), 0, "a tick that cannot take its claim makes no external call");
    h.kv.set_fault(None);
    assert!(
        !h.kv.snapshot().contains_key(&agent_zero_engine::log_key("t-kvfail", understand.expected_seq)),
        "nothing half-written"
    );
    assert_eq!(h.load("t-kvfail").state, TaskState::Understanding);
    // The queue redelivers the unacknowledged message.
    h.queue.messages.borrow_mut().push_back((understand, 0));
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
    assert_eq!(h.decider.calls(), 1, "the model is asked once for the step");
}

#[test]
fn cold_start_from_the_log_equals_the_checkpoint() {
    let h = Harness::new();
    h.decider.push(decision(claim()));
    h.create(stimulus("t-cold", RunMode::Fix, policy(FIX_POLICY)));
    for _ in 0..4 {
        let (tick, _) = h.queue.messages.borrow_mut().pop_front().unwrap();
        h.tick(&tick).unwrap();
    }
    let warm = h.load("t-cold");
    block_on(agent_zero_ports::KeyValue::delete(&h.kv, &agent_zero_engine::meta_key("t-cold"))).unwrap();
    let cold = h.load("t-cold");
    assert_eq!(warm, cold);
    let entries: Vec<agent_zero_engine::Entry> =
        h.keys("task/t-cold/log/").iter().map(|k| serde_json::from_slice(&h.kv.snapshot()[k]).unwrap()).collect();
    assert_eq!(agent_zero_engine::fold(&entries).unwrap(), cold);
    assert!(matches!(entries[0].facts[0], Fact::Created { .. }));
    // The task finishes from the cold state.
    assert_eq!(h.drive(), Some(TickOutcome::Terminal(TerminalState::Completed)));
}

#[test]
fn per_tick_cost_is_bounded() {
    // A task's Durable Object: one request that reads (is the seq free,
    // the checkpoint, the claim) and claims the seq, with the step's bound
    // the previous tick put in the message; one commit of the entry with
    // the checkpoint, which carries the next tick's due time (the
    // creation puts the first step's bound in the first message too); the
    // tick that leaves the task quiet also removes its `active/` key. A
    // store that answers one key per request: three reads, the claim, its
    // commit mark, the entry, the checkpoint (with the due time: no
    // per-tick marker); Spin's, whose `get-many` reads the three at once:
    // five.
    for (h, bound) in [(Harness::new(), 2), (Harness::one_key_per_request(), 7), (Harness::spin(), 5)] {
        h.workspace.exits.borrow_mut().extend([1, 0]);
        h.decider.push(decision(claim()));
        h.decider.push(decision(claim()));
        h.run(stimulus("t-cost", RunMode::Fix, policy(FIX_POLICY)));
        let reports = h.reports.borrow();
        for (i, report) in reports.iter().enumerate() {
            let s = report.stats;
            let quiet = matches!(report.outcome, TickOutcome::Terminal(_) | TickOutcome::Waiting);
            let bound = if quiet { bound + 1 } else { bound };
            assert!(s.kv_operations() <= bound, "tick {i}: {s:?}");
            assert_eq!(s.entries_folded, 0, "a warm tick folds from the checkpoint: {s:?}");
            assert!(s.subrequests() <= 4, "{s:?}");
            assert!(s.model_calls <= 1 && s.publications <= 1);
        }
        assert!(reports.iter().any(|r| r.stats.kv_operations() == bound), "the bound is tight");
        assert_eq!(reports.iter().filter(|r| r.stats.kv_operations() > bound).count(), 1, "the last tick's removal");
        let kv: u32 = reports.iter().map(|r| r.stats.kv_operations()).sum();
        let sub: u32 = reports.iter().map(|r| r.stats.subrequests()).sum();
        eprintln!("ticks: {}; kv ops {kv} (at most {bound} a tick), subrequests {sub}", reports.len());
    }
}

/// A cold tick (no checkpoint) reads the log in batches of 64 entries: a
/// thousand-entry log is 16 requests to a task's Durable Object, inside a
/// Worker invocation's 1,000 subrequests; one `get-many` each on Spin;
/// key by key on a store without batch reads.
#[test]
fn a_cold_tick_reads_the_log_in_batches() {
    for (h, reads_per_entry) in
        [(Harness::new(), None), (Harness::spin(), None), (Harness::one_key_per_request(), Some(1))]
    {
        h.workspace.exits.borrow_mut().extend([1, 0]);
        h.decider.push(decision(claim()));
        h.decider.push(decision(claim()));
        let mut tick = h.create(stimulus("t-cold", RunMode::Fix, policy(FIX_POLICY)));
        // Advance a few ticks, then drop the checkpoint.
        for _ in 0..4 {
            match h.tick(&tick).unwrap().outcome {
                TickOutcome::Continue { next, .. } => tick = next,
                other => panic!("still running after a few ticks: {other:?}"),
            }
        }
        block_on(h.kv.delete(&agent_zero_engine::meta_key("t-cold"))).unwrap();
        let report = h.tick(&tick).unwrap();
        let folded = report.stats.entries_folded;
        assert_eq!(u64::from(folded), tick.expected_seq, "folded the whole log");
        let reads = report.stats.kv_reads;
        match reads_per_entry {
            None => assert_eq!(reads, 2, "one open read and one batch: {:?}", report.stats),
            Some(per) => assert_eq!(reads, 3 + per * folded, "{:?}", report.stats),
        }
    }
}

/// A tick whose checkpoint is lost on a long log rebuilds it a bounded
/// chunk at a time ([`agent_zero_engine::MAX_FOLD_PER_TICK`]), each chunk
/// its own tick of the same seq, then takes its step from the same state a
/// warm tick would have: no tick folds the whole log.
#[test]
fn a_cold_tick_on_a_long_log_rebuilds_its_checkpoint_in_bounded_chunks() {
    const CHUNK: u64 = agent_zero_engine::MAX_FOLD_PER_TICK;
    for h in [Harness::new(), Harness::spin(), Harness::one_key_per_request()] {
        h.decider.push(decision(claim()));
        let mut tick = h.create(stimulus("t-long", RunMode::Fix, policy(FIX_POLICY)));
        for _ in 0..3 {
            match h.tick(&tick).unwrap().outcome {
                TickOutcome::Continue { next, .. } => tick = next,
                other => panic!("{other:?}"),
            }
        }
        // A long log: entries that record a (zero) cost only, as a tick
        // that changed nothing else would, then the checkpoint lost.
        let first = tick.expected_seq;
        let last = first + 2 * CHUNK + 40;
        for seq in first..last {
            let facts = vec![Fact::Metered { cost: Default::default() }];
            let entry = agent_zero_engine::Entry { seq, at_ms: h.clock.now_ms(), facts };
            block_on(h.kv.put(&agent_zero_engine::log_key("t-long", seq), &serde_json::to_vec(&entry).unwrap()))
                .unwrap();
        }
        let warm = h.load("t-long");
        block_on(h.kv.delete(&agent_zero_engine::meta_key("t-long"))).unwrap();
        h.queue.messages.borrow_mut().clear();
        let tick = agent_zero_engine::Tick { expected_seq: last, ..tick };
        let calls = h.decider.calls();
        let mut folded = Vec::new();
        let mut report = h.tick(&tick).unwrap();
        while let TickOutcome::Continue { next, delay_ms: 0 } = &report.outcome
            && *next == tick
        {
            folded.push(u64::from(report.stats.entries_folded));
            assert!(report.resident.is_none(), "a chunk is no step");
            assert_eq!(h.decider.calls(), calls, "and pays for none");
            let (queued, _) = h.queue.messages.borrow_mut().pop_front().expect("the rest queued");
            assert_eq!(queued, tick);
            report = h.tick(&queued).unwrap();
        }
        folded.push(u64::from(report.stats.entries_folded));
        assert_eq!(folded, [CHUNK, CHUNK, last - 2 * CHUNK], "every tick folds at most {CHUNK} entries");
        assert!(matches!(report.outcome, TickOutcome::Continue { ref next, .. } if next.expected_seq == last + 1));
        // The step was taken on the task as a warm tick sees it: the
        // checkpoint its commit left is the fold of the whole log.
        let after = h.load("t-long");
        assert_eq!((after.seq, &after.stimulus, after.created_ms), (Some(last), &warm.stimulus, warm.created_ms));
        let log: Vec<agent_zero_engine::Entry> =
            h.keys("task/t-long/log/").iter().map(|k| serde_json::from_slice(&h.kv.snapshot()[k]).unwrap()).collect();
        assert_eq!(agent_zero_engine::fold(&log).unwrap(), after);
    }
}

#[test]
fn a_full_pool_is_waited_out_not_counted_as_sandbox_failures() {
    let h = Harness::new();
    // More refusals than `max_sandbox_errors` (3): still completes.
    h.workspace.fail_leases.set(5);
    h.decider.push(decision(claim()));
    let outcome = h.run(stimulus("t-pool", RunMode::Fix, policy(FIX_POLICY)));
    assert_eq!(outcome, Some(TickOutcome::Terminal(TerminalState::Completed)));
    let r = h.load("t-pool");
    assert_eq!(r.sandbox.errors, 0);
    assert_eq!(r.sandbox.lease_waits, 0, "reset once the lease was granted");
    assert!(r.conclusion.concluded.as_ref().is_some_and(|c| c.0.verified));
}

#[test]
fn a_file_the_issue_names_earns_scope_without_a_quote_of_its_own() {
    for (body, code) in [
        // Named: scope is earned, and the manifest's risk is what stops it.
        ("The version in Cargo.toml is wrong.", "high-impact-change"),
        // Not named (a longer name is another file): out of scope.
        ("The version in Cargo.toml.orig is wrong.", "out-of-scope"),
    ] {
        let h = Harness::new();
        let mut finding = claim();
        finding.files.push("Cargo.toml".into());
        let ModelOutcome::Decided { mut decision, usage } = decision(finding) else { unreachable!() };
        let mut change = decision.changes[0].clone();
        change.path = "Cargo.toml".into();
        decision.changes.push(change);
        h.decider.push(ModelOutcome::Decided { decision, usage });
        let mut named = stimulus("t-named", RunMode::Fix, policy(FIX_POLICY));
        named.input.issue_body = Some(agent_zero_contracts::UntrustedText::capped(body, 1_000));
        assert_eq!(h.run(named), Some(TickOutcome::Waiting), "{body}");
        assert_eq!(refusal_code(&h.load("t-named")).as_deref(), Some(code), "{body}");
        assert_eq!(h.workspace.writes.get(), 0);
    }
}

#[test]
fn acceptance_criteria_past_the_cap_are_left_out_and_listed_in_the_coverage() {
    let h = Harness::new();
    let ModelOutcome::Decided { mut decision, usage } = decision(claim()) else { unreachable!() };
    decision.acceptance_criteria = (0..25).map(|i| format!("criterion {i}")).collect();
    h.decider.push(ModelOutcome::Decided { decision, usage });
    h.run(stimulus("t-criteria", RunMode::Fix, policy(FIX_POLICY)));
    let r = h.load("t-criteria");
    let (result, evidence) = &**r.conclusion.concluded.as_ref().unwrap();
    assert_eq!(result.acceptance_criteria.len(), agent_zero_contracts::MAX_ACCEPTANCE_CRITERIA);
    assert_eq!(evidence.acceptance_criteria, result.acceptance_criteria);
    let omitted = evidence.coverage.omitted.iter().find(|o| o.subject == "acceptance criteria").expect("listed");
    assert!(omitted.reason.starts_with("5 criteria past the first 20 dropped"), "{}", omitted.reason);
}
