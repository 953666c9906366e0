//! The automaton of `MATCH_RECOGNIZE`, as Flink's CEP library builds and runs it (`NFACompiler`,
//! `NFA`), for a pattern of variables with quantifiers and strict contiguity.
//!
//! States are built from the last variable back to the first. A state has TAKE transitions
//! (the row joins the variable and the match moves on) and PROCEED transitions (the state is
//! skipped without consuming the row). A greedy quantifier that may stop makes the following
//! state accept only rows its own variable rejects. Every partial match follows every enabled
//! transition, so several partial matches live side by side; a completed match is emitted
//! once no partial match that started earlier is pending, and the skip strategy then discards
//! the partial and completed matches it overlaps.

use riffle_plan::match_recognize::{AfterMatch, PatternVariable};

use crate::task::RuntimeError;

/// A row of one partition: its time and its number in processing order.
pub(super) type EventId = (i64, u64);

/// A transition condition.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Condition {
    True,
    /// The `DEFINE` condition of a variable (with the row counted as that variable's).
    Variable(usize),
    And(Box<Condition>, Box<Condition>),
    Not(Box<Condition>),
}

#[derive(Debug, Clone)]
struct Transition {
    take: bool,
    target: usize,
    condition: Condition,
}

#[derive(Debug, Clone)]
struct State {
    /// The variable a row taken here maps to (`None` for the final state).
    variable: Option<usize>,
    transitions: Vec<Transition>,
}

/// The compiled pattern.
#[derive(Debug, Clone)]
pub(super) struct Nfa {
    states: Vec<State>,
    start: usize,
    final_state: usize,
}

impl Nfa {
    /// Builds the automaton of `pattern` (Flink's `NFACompiler`).
    pub(super) fn compile(pattern: &[PatternVariable]) -> Self {
        let mut nfa = Nfa {
            states: vec![State {
                variable: None,
                transitions: Vec::new(),
            }],
            start: 0,
            final_state: 0,
        };
        let mut sink = 0;
        for (v, var) in pattern.iter().enumerate().rev() {
            sink = nfa.variable_states(v, var, sink);
        }
        nfa.start = sink;
        nfa
    }

    fn state(&mut self, variable: usize) -> usize {
        self.states.push(State {
            variable: Some(variable),
            transitions: Vec::new(),
        });
        self.states.len() - 1
    }

    fn add(&mut self, from: usize, take: bool, target: usize, condition: Condition) {
        self.states[from].transitions.push(Transition {
            take,
            target,
            condition,
        });
    }

    /// A greedy quantifier: every transition of `state` also requires `take` to fail.
    fn exclude(&mut self, state: usize, take: &Condition) {
        for t in &mut self.states[state].transitions {
            let c = std::mem::replace(&mut t.condition, Condition::True);
            t.condition = Condition::And(
                Box::new(c),
                Box::new(Condition::Not(Box::new(take.clone()))),
            );
        }
    }

    /// A state taking one row into `target`, optionally skippable to `proceed`.
    fn singleton(&mut self, v: usize, target: usize, proceed: Option<usize>) -> usize {
        let s = self.state(v);
        self.add(s, true, target, Condition::Variable(v));
        if let Some(p) = proceed {
            self.add(s, false, p, Condition::True);
        }
        s
    }

    /// The states of variable `v` in front of `sink`; returns the first.
    fn variable_states(&mut self, v: usize, var: &PatternVariable, sink: usize) -> usize {
        let take = Condition::Variable(v);
        let optional = var.min == 0;
        match var.max {
            // `?`: Flink's optional(), never greedy-marked.
            Some(1) => self.singleton(v, sink, optional.then_some(sink)),
            // Looping: `*`, `+`, `{n,}`.
            None => {
                let looping = self.state(v);
                self.add(looping, false, sink, Condition::True);
                if var.greedy {
                    self.exclude(sink, &take);
                }
                self.add(looping, true, looping, take.clone());
                let mut last = looping;
                for _ in 1..var.min.max(1) {
                    last = self.singleton(v, last, None);
                }
                self.singleton(v, last, optional.then_some(sink))
            }
            // `{n}`, `{n,m}`.
            Some(max) => {
                let from = var.min.max(1);
                if var.greedy && from != max {
                    self.exclude(sink, &take);
                }
                let mut last = sink;
                for _ in from..max {
                    last = self.singleton(v, last, Some(sink));
                }
                for _ in 1..from {
                    last = self.singleton(v, last, None);
                }
                self.singleton(v, last, optional.then_some(sink))
            }
        }
    }
}

/// A partial (or completed) match: the state it waits in and the rows it took.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PartialMatch {
    pub(super) state: usize,
    /// The rows taken, in order, each with its variable.
    pub(super) events: Vec<(usize, EventId)>,
    /// The first row (`None` for the start state, which has taken none).
    pub(super) start: Option<EventId>,
    /// Creation order (ties between matches of the same start).
    pub(super) seq: u64,
}

impl PartialMatch {
    /// Flink's order of computation states: by first row, the start state last.
    fn order(&self) -> EventId {
        self.start.unwrap_or((i64::MAX, u64::MAX))
    }
}

/// Evaluates `DEFINE` conditions.
pub(super) trait Conditions {
    /// Whether row `row` satisfies the condition of `variable` in a partial match that took
    /// `events` (the row counts as `variable`'s last row).
    fn holds(
        &mut self,
        variable: usize,
        events: &[(usize, EventId)],
        row: EventId,
    ) -> Result<bool, RuntimeError>;
}

/// The matching state of one partition.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Matcher {
    pub(super) partials: Vec<PartialMatch>,
    pub(super) completed: Vec<PartialMatch>,
    pub(super) next_seq: u64,
}

/// A found match: the rows with their variables.
pub(super) type Found = Vec<(usize, EventId)>;

impl Matcher {
    /// A partition's matcher before its first row.
    pub(super) fn new(nfa: &Nfa) -> Self {
        Matcher {
            partials: vec![PartialMatch {
                state: nfa.start,
                events: Vec::new(),
                start: None,
                seq: 0,
            }],
            completed: Vec::new(),
            next_seq: 1,
        }
    }

    /// Nothing is pending: only the start state waits.
    pub(super) fn is_idle(&self) -> bool {
        self.completed.is_empty() && self.partials.iter().all(|p| p.start.is_none())
    }

    /// Every row a pending match holds.
    pub(super) fn referenced(&self) -> impl Iterator<Item = EventId> + '_ {
        self.partials
            .iter()
            .chain(&self.completed)
            .flat_map(|p| p.events.iter().map(|(_, e)| *e))
    }

    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// Feeds one row; returns the matches it releases.
    pub(super) fn process(
        &mut self,
        nfa: &Nfa,
        row: EventId,
        skip: Skip,
        conditions: &mut dyn Conditions,
    ) -> Result<Vec<Found>, RuntimeError> {
        let mut partials = std::mem::take(&mut self.partials);
        partials.sort_by_key(|p| (p.order(), p.seq));
        let mut next = Vec::new();
        for pm in &partials {
            for state in self.next_states(nfa, pm, row, conditions)? {
                if state.state == nfa.final_state {
                    self.completed.push(state);
                } else {
                    next.push(state);
                }
            }
        }
        self.partials = next;
        self.release(skip)
    }

    /// Drops the partial matches that started `within` or longer before `time`; returns the
    /// matches that this releases.
    pub(super) fn advance_time(
        &mut self,
        time: i64,
        within: Option<i64>,
        skip: Skip,
    ) -> Result<Vec<Found>, RuntimeError> {
        let Some(window) = within else {
            return Ok(Vec::new());
        };
        let before = self.partials.len();
        self.partials
            .retain(|p| p.start.is_none_or(|(t, _)| time.saturating_sub(t) < window));
        if before == self.partials.len() {
            return Ok(Vec::new());
        }
        self.release(skip)
    }

    /// Emits the completed matches no partial match that started earlier holds back (one that
    /// started with the same row does not), pruning after each.
    fn release(&mut self, skip: Skip) -> Result<Vec<Found>, RuntimeError> {
        let mut out = Vec::new();
        loop {
            self.completed.sort_by_key(|p| (p.order(), p.seq));
            let Some(earliest) = self.completed.first() else {
                break;
            };
            let blocked = self.partials.iter().any(|p| p.order() < earliest.order());
            if blocked {
                break;
            }
            let found = self.completed.remove(0).events;
            if let Some((pruning, inclusive)) = pruning_id(skip, &found)? {
                let pruned = |p: &PartialMatch| {
                    p.start
                        .is_some_and(|s| if inclusive { s <= pruning } else { s < pruning })
                };
                self.partials.retain(|p| !pruned(p));
                self.completed.retain(|p| !pruned(p));
            }
            out.push(found);
        }
        Ok(out)
    }

    /// Flink's `computeNextStates` for one partial match and row.
    fn next_states(
        &mut self,
        nfa: &Nfa,
        pm: &PartialMatch,
        row: EventId,
        conditions: &mut dyn Conditions,
    ) -> Result<Vec<PartialMatch>, RuntimeError> {
        let mut out = Vec::new();
        for (variable, target) in decision_edges(nfa, pm, row, conditions)? {
            let mut events = pm.events.clone();
            events.push((variable, row));
            let start = pm.start.or(Some(row));
            let seq = self.seq();
            out.push(PartialMatch {
                state: target,
                events: events.clone(),
                start,
                seq,
            });
            if proceeds_to_final(nfa, target, pm, row, conditions)? {
                let seq = self.seq();
                out.push(PartialMatch {
                    state: nfa.final_state,
                    events,
                    start,
                    seq,
                });
            }
        }
        if pm.start.is_none() {
            // The start state stays, ready for the next row.
            let seq = self.seq();
            out.push(PartialMatch {
                state: pm.state,
                events: Vec::new(),
                start: None,
                seq,
            });
        }
        Ok(out)
    }
}

/// The TAKE transitions reachable from `pm`'s state through PROCEED transitions whose
/// conditions hold, as (variable of the taking state, target).
fn decision_edges(
    nfa: &Nfa,
    pm: &PartialMatch,
    row: EventId,
    conditions: &mut dyn Conditions,
) -> Result<Vec<(usize, usize)>, RuntimeError> {
    let mut edges = Vec::new();
    let mut stack = vec![pm.state];
    while let Some(s) = stack.pop() {
        let state = &nfa.states[s];
        for t in &state.transitions {
            if !holds(&t.condition, pm, row, conditions)? {
                continue;
            }
            if t.take {
                if let Some(v) = state.variable {
                    edges.push((v, t.target));
                }
            } else {
                stack.push(t.target);
            }
        }
    }
    Ok(edges)
}

/// Whether the final state is reachable from `state` through PROCEED transitions alone.
fn proceeds_to_final(
    nfa: &Nfa,
    state: usize,
    pm: &PartialMatch,
    row: EventId,
    conditions: &mut dyn Conditions,
) -> Result<bool, RuntimeError> {
    let mut stack = vec![state];
    while let Some(s) = stack.pop() {
        for t in &nfa.states[s].transitions {
            if t.take || !holds(&t.condition, pm, row, conditions)? {
                continue;
            }
            if t.target == nfa.final_state {
                return Ok(true);
            }
            stack.push(t.target);
        }
    }
    Ok(false)
}

fn holds(
    condition: &Condition,
    pm: &PartialMatch,
    row: EventId,
    conditions: &mut dyn Conditions,
) -> Result<bool, RuntimeError> {
    Ok(match condition {
        Condition::True => true,
        Condition::Variable(v) => conditions.holds(*v, &pm.events, row)?,
        Condition::And(a, b) => holds(a, pm, row, conditions)? && holds(b, pm, row, conditions)?,
        Condition::Not(c) => !holds(c, pm, row, conditions)?,
    })
}

/// `AFTER MATCH SKIP ...` with its variable resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Skip {
    PastLastRow,
    ToNextRow,
    ToFirst(usize),
    ToLast(usize),
}

impl Skip {
    /// The strategy of `after` over `pattern`.
    pub(super) fn new(
        after: &AfterMatch,
        pattern: &[PatternVariable],
    ) -> Result<Self, RuntimeError> {
        let variable = |name: &str| {
            pattern
                .iter()
                .position(|v| v.name == name)
                .ok_or_else(|| RuntimeError::new(format!("unknown pattern variable {name}")))
        };
        Ok(match after {
            AfterMatch::PastLastRow => Skip::PastLastRow,
            AfterMatch::ToNextRow => Skip::ToNextRow,
            AfterMatch::ToFirst(v) => Skip::ToFirst(variable(v)?),
            AfterMatch::ToLast(v) => Skip::ToLast(variable(v)?),
        })
    }
}

/// Where the skip strategy cuts after match `found`: matches starting at or before (`true`) or
/// strictly before (`false`) the returned row are discarded. Skipping to a variable the match
/// lacks, or to the match's own first row, fails the job as in Flink.
fn pruning_id(skip: Skip, found: &Found) -> Result<Option<(EventId, bool)>, RuntimeError> {
    let rows = || found.iter().map(|(_, e)| *e);
    let to_variable = |v: usize, first: bool| -> Result<Option<(EventId, bool)>, RuntimeError> {
        let mut of_v = found.iter().filter(|(var, _)| *var == v).map(|(_, e)| *e);
        let at = if first { of_v.next() } else { of_v.next_back() };
        let Some(at) = at else {
            return Err(RuntimeError::new(
                "Could not skip to the variable of AFTER MATCH SKIP: no such element in the found match",
            ));
        };
        if rows().min() == Some(at) {
            return Err(RuntimeError::new(
                "Could not skip to first element of a match.",
            ));
        }
        Ok(Some((at, false)))
    };
    Ok(match skip {
        Skip::PastLastRow => rows().max().map(|e| (e, true)),
        Skip::ToNextRow => rows().min().map(|e| (e, true)),
        Skip::ToFirst(v) => to_variable(v, true)?,
        Skip::ToLast(v) => to_variable(v, false)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variable's condition: `rule(value, values the match took)`.
    type Rule = Box<dyn Fn(i64, &[i64]) -> bool>;

    /// Conditions over the values of a row sequence, one rule per variable.
    struct Rules<'a> {
        values: &'a [i64],
        rules: Vec<Rule>,
    }

    impl Conditions for Rules<'_> {
        fn holds(
            &mut self,
            variable: usize,
            events: &[(usize, EventId)],
            row: EventId,
        ) -> Result<bool, RuntimeError> {
            let taken: Vec<i64> = events
                .iter()
                .map(|(_, (_, id))| self.values[*id as usize])
                .collect();
            Ok(self.rules[variable](self.values[row.1 as usize], &taken))
        }
    }

    fn var(name: &str, min: u32, max: Option<u32>, greedy: bool) -> PatternVariable {
        PatternVariable {
            name: name.into(),
            min,
            max,
            greedy,
        }
    }

    /// The matches as (variable, value) lists.
    fn run(
        pattern: &[PatternVariable],
        skip: Skip,
        values: &[i64],
        rules: Rules<'_>,
    ) -> Vec<Vec<(usize, i64)>> {
        let nfa = Nfa::compile(pattern);
        let mut matcher = Matcher::new(&nfa);
        let mut rules = rules;
        let mut out = Vec::new();
        for (i, _) in values.iter().enumerate() {
            let found = matcher
                .process(&nfa, (i as i64, i as u64), skip, &mut rules)
                .expect("process");
            for f in found {
                out.push(
                    f.iter()
                        .map(|(v, (_, id))| (*v, values[*id as usize]))
                        .collect(),
                );
            }
        }
        out
    }

    fn overlap_rules(values: &[i64]) -> Rules<'_> {
        Rules {
            values,
            rules: vec![
                Box::new(|v, _| v < 20),
                Box::new(|v, _| v > 15),
                Box::new(|v, _| v > 20),
            ],
        }
    }

    #[test]
    fn a_greedy_loop_keeps_the_rows_the_next_variable_would_take() {
        let values = [12, 17, 19, 21, 25, 18];
        let greedy = [
            var("A", 1, Some(1), true),
            var("B", 0, None, true),
            var("C", 1, Some(1), true),
        ];
        // Every row C accepts, B accepts too: the greedy B* never lets C take one.
        assert!(run(&greedy, Skip::PastLastRow, &values, overlap_rules(&values)).is_empty());
        let reluctant = [
            var("A", 1, Some(1), true),
            var("B", 0, None, false),
            var("C", 1, Some(1), true),
        ];
        assert_eq!(
            run(
                &reluctant,
                Skip::PastLastRow,
                &values,
                overlap_rules(&values)
            ),
            [vec![(0, 12), (1, 17), (1, 19), (2, 21)]]
        );
    }

    #[test]
    fn skip_to_next_row_lets_matches_overlap_and_past_last_row_does_not() {
        let values = [1, 2, 3, 10];
        let pattern = [var("P", 1, None, false), var("B", 1, Some(1), true)];
        let rules = |values| Rules {
            values,
            rules: vec![Box::new(|v, _| v < 5), Box::new(|v, _| v > 5)],
        };
        let next = run(&pattern, Skip::ToNextRow, &values, rules(&values));
        assert_eq!(next.len(), 3, "{next:?}");
        assert_eq!(next[0], [(0, 1), (0, 2), (0, 3), (1, 10)]);
        let past = run(&pattern, Skip::PastLastRow, &values, rules(&values));
        assert_eq!(past, [vec![(0, 1), (0, 2), (0, 3), (1, 10)]]);
    }

    #[test]
    fn a_range_stops_at_its_maximum_and_conditions_see_the_match() {
        // A{2,3} B where B must exceed the sum of the A rows so far.
        let values = [1, 1, 1, 1, 9];
        let pattern = [var("A", 2, Some(3), false), var("B", 1, Some(1), true)];
        let rules = Rules {
            values: &values,
            rules: vec![
                Box::new(|v, _| v == 1),
                Box::new(|v, taken: &[i64]| v > taken.iter().sum::<i64>()),
            ],
        };
        let found = run(&pattern, Skip::PastLastRow, &values, rules);
        assert_eq!(found, [vec![(0, 1), (0, 1), (0, 1), (1, 9)]]);
    }

    #[test]
    fn partial_matches_time_out_after_within() {
        let pattern = [var("A", 1, Some(1), true), var("B", 1, Some(1), true)];
        let nfa = Nfa::compile(&pattern);
        let mut matcher = Matcher::new(&nfa);
        let values = [1, 9];
        let mut rules = Rules {
            values: &values,
            rules: vec![Box::new(|v, _| v == 1), Box::new(|v, _| v == 9)],
        };
        matcher
            .process(&nfa, (0, 0), Skip::PastLastRow, &mut rules)
            .expect("process");
        assert!(!matcher.is_idle());
        matcher
            .advance_time(10, Some(10), Skip::PastLastRow)
            .expect("advance");
        assert!(matcher.is_idle());
        let found = matcher
            .process(&nfa, (10, 1), Skip::PastLastRow, &mut rules)
            .expect("process");
        assert!(found.is_empty());
    }

    #[test]
    fn skipping_to_the_first_row_of_the_match_fails_as_in_flink() {
        let pattern = [var("A", 1, Some(1), true), var("B", 1, Some(1), true)];
        let nfa = Nfa::compile(&pattern);
        let mut matcher = Matcher::new(&nfa);
        let values = [1, 9];
        let mut rules = Rules {
            values: &values,
            rules: vec![Box::new(|_, _| true), Box::new(|_, _| true)],
        };
        matcher
            .process(&nfa, (0, 0), Skip::ToFirst(0), &mut rules)
            .expect("process");
        let err = matcher
            .process(&nfa, (1, 1), Skip::ToFirst(0), &mut rules)
            .expect_err("skip to the first row");
        assert!(err.to_string().contains("Could not skip to first element"));
    }
}
