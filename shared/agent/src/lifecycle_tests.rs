use agent_zero_contracts::{TaskState, TerminalState};

use super::*;

/// The seed's table, written out independently of `edge`.
const ALLOWED: &[(TaskState, TaskState)] = &[
    (Queued, Discovering),
    (Queued, Failed),
    // Ours, not the seed's: the policy gate declines a delivery at admission.
    (Queued, Ignored),
    (Discovering, Understanding),
    (Discovering, Failed),
    (Understanding, Validating),
    (Understanding, Failed),
    (Validating, Planning),
    (Validating, Completed),
    (Validating, NeedsHuman),
    (Validating, Failed),
    (Planning, Executing),
    (Planning, Completed),
    (Planning, NeedsHuman),
    (Planning, Failed),
    (Executing, Verifying),
    (Executing, NeedsHuman),
    (Executing, Failed),
    (Verifying, Reviewing),
    (Verifying, Planning),
    (Verifying, NeedsHuman),
    (Verifying, Failed),
    (Reviewing, Completed),
    (Reviewing, NeedsHuman),
    (Reviewing, Failed),
    (NeedsHuman, Planning),
    (NeedsHuman, Failed),
];

/// A machine standing in `state` with `attempts` executions behind it,
/// reached only through legal moves.
fn machine_in(state: TaskState, attempts: u32, max: u32) -> LifecycleMachine {
    let mut m = LifecycleMachine::new(max);
    let path: &[TaskState] = &[Discovering, Understanding, Validating, Planning];
    for next in path {
        m.to(*next).unwrap();
    }
    for i in 0..attempts {
        m.to(Executing).unwrap();
        m.to(Verifying).unwrap();
        if i + 1 < attempts {
            m.to(Planning).unwrap();
        }
    }
    let route: &[TaskState] = match state {
        Queued => return LifecycleMachine::new(max),
        Ignored => {
            let mut m = LifecycleMachine::new(max);
            m.to(Ignored).unwrap();
            return m;
        }
        Discovering | Understanding | Validating => {
            let mut m = LifecycleMachine::new(max);
            for next in &path[..path.iter().position(|s| *s == state).unwrap() + 1] {
                m.to(*next).unwrap();
            }
            return m;
        }
        Planning if attempts > 0 => &[Planning],
        Planning => &[],
        Executing if attempts > 0 => &[Planning, Executing],
        Executing => &[Executing],
        Verifying if attempts > 0 => &[],
        Verifying => &[Executing, Verifying],
        Reviewing if attempts > 0 => &[Reviewing],
        Reviewing => &[Executing, Verifying, Reviewing],
        Completed => &[Completed],
        NeedsHuman => &[NeedsHuman],
        Failed => &[Failed],
    };
    for next in route {
        m.to(*next).unwrap();
    }
    assert_eq!(m.state(), state);
    m
}

#[test]
fn the_table_is_exactly_the_seed_for_every_pair() {
    let mut defined = 0;
    for from in TaskState::ALL {
        for to in TaskState::ALL {
            let expected = ALLOWED.contains(&(*from, *to));
            assert_eq!(can_transition(*from, *to), expected, "{from} -> {to}");
            defined += usize::from(expected);
        }
    }
    assert_eq!(defined, ALLOWED.len());
    assert_eq!(TaskState::ALL.len(), 12, "a new state needs a row here");
}

#[test]
fn the_machine_refuses_every_undefined_pair_and_takes_every_defined_one() {
    for from in TaskState::ALL {
        for to in TaskState::ALL {
            let mut m = machine_in(*from, 0, 3);
            let result = m.to(*to);
            match edge(*from, *to) {
                None => {
                    assert_eq!(result, Err(TransitionError::Undefined { from: *from, to: *to }));
                    assert_eq!(m.state(), *from, "a refused move leaves the state alone");
                }
                Some(Edge::Human) => {
                    assert_eq!(result, Err(TransitionError::HumanDecisionRequired { to: *to }));
                    assert_eq!(m.state(), *from);
                }
                Some(_) => assert_eq!(result, Ok(*to), "{from} -> {to}"),
            }
        }
    }
}

#[test]
fn every_non_terminal_state_can_fail_and_terminal_states_are_final() {
    for state in TaskState::ALL {
        if state.is_terminal() {
            let human = if *state == NeedsHuman { vec![Planning, Failed] } else { vec![] };
            assert_eq!(successors(*state), human, "{state}");
        } else {
            assert!(can_transition(*state, Failed), "{state}");
            let mut m = machine_in(*state, 0, 3);
            assert_eq!(m.fail(), Failed);
        }
    }
}

/// Whether `to` is reachable from `from` without entering `avoid`.
fn reachable_avoiding(from: TaskState, to: TaskState, avoid: TaskState) -> bool {
    let mut seen = vec![from];
    let mut stack = vec![from];
    while let Some(state) = stack.pop() {
        for next in successors(state) {
            if next == to {
                return true;
            }
            if next != avoid && !seen.contains(&next) {
                seen.push(next);
                stack.push(next);
            }
        }
    }
    false
}

#[test]
fn executing_reaches_completed_only_through_verifying_and_reviewing() {
    assert!(!can_transition(Executing, Completed));
    assert!(!can_transition(Planning, Reviewing));
    assert!(!can_transition(Verifying, Completed));
    assert!(!reachable_avoiding(Executing, Reviewing, Verifying));
    // The table alone allows executing -> verifying -> planning -> completed;
    // the attempt guard closes it (see the next test).
    assert!(reachable_avoiding(Executing, Completed, Reviewing));
}

#[test]
fn planning_cannot_complete_after_an_executed_attempt() {
    let mut m = machine_in(Planning, 1, 3);
    assert_eq!(m.to(Completed), Err(TransitionError::UnverifiedCompletion { attempts: 1 }));
    assert_eq!(m.state(), Planning);
    assert_eq!(m.to(Executing), Ok(Executing));
    let mut early = machine_in(Planning, 0, 3);
    assert_eq!(early.to(Completed), Ok(Completed), "suggest-only runs end here");
    let mut verdict_only = machine_in(Validating, 0, 3);
    assert_eq!(verdict_only.to(Completed), Ok(Completed), "rejected findings end here");
}

#[test]
fn repair_loops_until_max_attempts() {
    let mut m = LifecycleMachine::new(2);
    for next in [Discovering, Understanding, Validating, Planning, Executing, Verifying] {
        m.to(next).unwrap();
    }
    assert_eq!(m.attempts(), 1);
    assert_eq!(m.to(Planning), Ok(Planning), "repair with an attempt left");
    assert_eq!(m.to(Executing), Ok(Executing));
    assert_eq!(m.attempts(), 2);
    m.to(Verifying).unwrap();
    let exhausted = TransitionError::AttemptsExhausted { from: Verifying, to: Planning, attempts: 2, max_attempts: 2 };
    assert_eq!(m.to(Planning), Err(exhausted));
    assert!(!m.has_attempt_left());
    assert_eq!(m.finish(TerminalState::Failed), Ok(TerminalState::Failed));
}

#[test]
fn a_single_attempt_allows_no_repair() {
    let mut m = machine_in(Verifying, 1, 1);
    assert!(matches!(m.to(Planning), Err(TransitionError::AttemptsExhausted { .. })));
    assert_eq!(m.to(Reviewing), Ok(Reviewing));
    assert_eq!(m.to(Completed), Ok(Completed));
    assert_eq!(LifecycleMachine::new(0).max_attempts(), 1, "0 is read as 1");
}

#[test]
fn an_approval_after_exhausted_attempts_grants_exactly_one_more() {
    let mut m = machine_in(Verifying, 2, 2);
    m.to(NeedsHuman).unwrap();
    assert_eq!(m.approve(), Ok(Planning));
    assert_eq!(m.max_attempts(), 3, "the person asked for one more try");
    assert_eq!(m.to(Executing), Ok(Executing));
    assert_eq!(m.to(Verifying), Ok(Verifying));
    assert!(matches!(m.to(Planning), Err(TransitionError::AttemptsExhausted { .. })), "and only one");
    m.to(NeedsHuman).unwrap();
    assert_eq!(m.approve(), Ok(Planning));
    assert_eq!((m.attempts(), m.max_attempts()), (3, 4));
    assert!(matches!(m.to(Completed), Err(TransitionError::UnverifiedCompletion { .. })));
    // An approval with attempts left grants none.
    let mut early = machine_in(Planning, 0, 3);
    early.to(NeedsHuman).unwrap();
    early.approve().unwrap();
    assert_eq!(early.max_attempts(), 3);
}

#[test]
fn only_a_human_leaves_needs_human() {
    let mut m = machine_in(Planning, 0, 3);
    assert_eq!(m.approve(), Err(TransitionError::NotAwaitingHuman { state: Planning }));
    assert_eq!(m.deny(), Err(TransitionError::NotAwaitingHuman { state: Planning }));
    m.to(NeedsHuman).unwrap();
    assert!(m.is_terminal());
    assert_eq!(m.to(Planning), Err(TransitionError::HumanDecisionRequired { to: Planning }));
    assert_eq!(m.fail(), NeedsHuman, "fail() does not override a terminal state");
    assert_eq!(m.approve(), Ok(Planning));
    assert_eq!(m.to(Executing), Ok(Executing));
    let mut denied = machine_in(NeedsHuman, 0, 3);
    assert_eq!(denied.deny(), Ok(Failed));
    assert_eq!(denied.approve(), Err(TransitionError::NotAwaitingHuman { state: Failed }));
}

#[test]
fn finish_keeps_the_first_ending() {
    let mut m = machine_in(Reviewing, 0, 3);
    assert_eq!(m.finish(TerminalState::Completed), Ok(TerminalState::Completed));
    assert_eq!(m.finish(TerminalState::Failed), Ok(TerminalState::Completed));
    let mut early = LifecycleMachine::new(3);
    assert_eq!(early.finish(TerminalState::Completed), Err(TransitionError::Undefined { from: Queued, to: Completed }));
    assert_eq!(early.finish(TerminalState::Failed), Ok(TerminalState::Failed));
}

#[test]
fn errors_read_as_sentences() {
    let e = TransitionError::Undefined { from: Executing, to: Completed };
    assert_eq!(e.to_string(), "invalid lifecycle transition: executing -> completed");
}
