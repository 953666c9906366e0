//! Which restored state each new subtask takes when a job is restored with another
//! parallelism (Flink's rescaling from a checkpoint or savepoint).
//!
//! * Keyed operators: each new subtask owns a key-group range; it takes the entries of its key
//!   groups from the old subtasks whose ranges overlap its own ([`crate::keyed_snapshot`]),
//!   and their operator-wide parts (watermarks: the operator keeps the minimum).
//! * Sources: every old subtask's position goes to every new subtask, which keeps the splits
//!   it now reads (a source that cannot is refused by name).
//! * Sinks: every old subtask's pending transaction is committed again by one new subtask.
//! * Operators whose state is not split by key group are refused by name.

use std::ops::Range;

use riffle_state::KeyGroups;

use super::storage::Restored;
use super::TaskId;

/// The restored state of one new subtask.
#[derive(Debug)]
pub enum SubtaskState<'a> {
    /// Nothing to restore.
    None,
    /// The parallelism did not change: the subtask's own snapshot.
    Same(&'a [u8]),
    /// The parallelism changed from `old_parallelism`: the snapshots of the old subtasks
    /// this one takes state from (by old index).
    Rescaled {
        /// The operator's parallelism in the checkpoint.
        old_parallelism: usize,
        /// The snapshots of the old subtasks whose key groups overlap this subtask's.
        overlapping: Vec<&'a [u8]>,
        /// The snapshots of every old subtask, in subtask order (absent: no state).
        all: Vec<Option<&'a [u8]>>,
        /// The key groups this subtask owns.
        range: Range<u16>,
    },
}

/// The state subtask `task` (of an operator with `parallelism` subtasks now) restores from
/// `restored`.
pub fn subtask_state(
    restored: &Restored,
    task: TaskId,
    parallelism: usize,
    groups: KeyGroups,
) -> SubtaskState<'_> {
    let old = restored
        .metadata
        .operators
        .iter()
        .find(|o| o.id == task.operator)
        .map_or(parallelism, |o| o.parallelism);
    let state = |subtask: usize| {
        restored
            .states
            .get(&TaskId {
                operator: task.operator,
                subtask,
            })
            .map(Vec::as_slice)
    };
    if old == parallelism {
        return state(task.subtask).map_or(SubtaskState::None, SubtaskState::Same);
    }
    let all: Vec<Option<&[u8]>> = (0..old).map(state).collect();
    if all.iter().all(Option::is_none) {
        return SubtaskState::None;
    }
    let range = groups.range_of(task.subtask, parallelism);
    let overlapping = (0..old)
        .filter(|j| {
            let theirs = groups.range_of(*j, old);
            theirs.start < range.end && range.start < theirs.end
        })
        .filter_map(|j| all[j])
        .collect();
    SubtaskState::Rescaled {
        old_parallelism: old,
        overlapping,
        all,
        range,
    }
}

/// The old sink subtasks whose transactions new subtask `index` (of `parallelism`) commits
/// again: every old subtask is taken by exactly one new one.
pub fn transactions_of(index: usize, parallelism: usize, old_parallelism: usize) -> Vec<usize> {
    (0..old_parallelism)
        .filter(|k| k % parallelism.max(1) == index)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::super::storage::{Metadata, OperatorMeta};
    use super::*;

    fn restored(old: usize) -> Restored {
        let operators = vec![OperatorMeta {
            id: 0,
            fingerprint: "GroupAggregate()".into(),
            parallelism: old,
        }];
        let mut states = BTreeMap::new();
        for subtask in 0..old {
            states.insert(
                TaskId {
                    operator: 0,
                    subtask,
                },
                vec![subtask as u8],
            );
        }
        Restored {
            metadata: Metadata::new("job", 1, 128, operators),
            dir: PathBuf::from("chk-1"),
            states,
        }
    }

    #[test]
    fn a_new_subtask_takes_the_old_subtasks_overlapping_its_key_groups() {
        let groups = KeyGroups::default();
        let r = restored(2);
        let task = |subtask| TaskId {
            operator: 0,
            subtask,
        };
        assert!(matches!(
            subtask_state(&r, task(1), 2, groups),
            SubtaskState::Same([1])
        ));
        // 2 -> 3: [0, 64) [64, 128) -> [0, 43) [43, 86) [86, 128).
        let overlapping = |subtask, p| match subtask_state(&r, task(subtask), p, groups) {
            SubtaskState::Rescaled { overlapping, .. } => overlapping.concat(),
            other => panic!("{other:?}"),
        };
        assert_eq!(overlapping(0, 3), vec![0]);
        assert_eq!(overlapping(1, 3), vec![0, 1]);
        assert_eq!(overlapping(2, 3), vec![1]);
        assert_eq!(overlapping(0, 1), vec![0, 1]);
    }

    #[test]
    fn every_old_transaction_is_committed_once() {
        for (old, new) in [(3, 1), (2, 3), (5, 2)] {
            let mut all: Vec<usize> = (0..new)
                .flat_map(|i| transactions_of(i, new, old))
                .collect();
            all.sort_unstable();
            assert_eq!(all, (0..old).collect::<Vec<_>>());
        }
    }
}
