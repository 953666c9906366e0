//! Which process runs which units.
//!
//! Every member of a group sees the same sorted list of live members and splits the sorted
//! units among them with RocketMQ's `AllocateMessageQueueAveragely`. [`StoreGroup`] is the
//! embedded store's consumer-group membership (`riffle_store::membership`): a member holds a
//! lock file for its lifetime, so a killed process leaves the group the moment the kernel
//! drops its lock, and the others rebalance at their next look. [`Solo`] runs everything.

use std::time::{SystemTime, UNIX_EPOCH};

use riffle_store::membership as store_membership;
use riffle_store::Store;

use crate::units::UnitId;
use crate::ClusterError;

/// This member's view of its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Bumped whenever a member joins, leaves or dies.
    pub generation: u64,
    /// The live members, sorted.
    pub members: Vec<String>,
    /// The units this member runs.
    pub mine: Vec<UnitId>,
}

/// A group of processes sharing a job's units.
pub trait Membership: Send + Sync {
    /// This member's name.
    fn name(&self) -> &str;
    /// The live members and this member's share of `units`.
    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError>;
    /// Whether other processes may join, so that a member waits for the group to settle
    /// before it starts units.
    fn may_grow(&self) -> bool {
        true
    }
}

/// A group of one: runs every unit.
#[derive(Debug, Default)]
pub struct Solo;

impl Membership for Solo {
    fn name(&self) -> &str {
        "solo"
    }

    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError> {
        Ok(Assignment {
            generation: 0,
            members: vec!["solo".to_string()],
            mine: units.to_vec(),
        })
    }

    fn may_grow(&self) -> bool {
        false
    }
}

/// The store group that the members of group `group` of job `job` join.
pub fn group_name(job: &str, group: &str) -> String {
    crate::stages::store_name(&format!("{job}--units-{group}"))
}

/// Membership of a job's group in the embedded store.
pub struct StoreGroup {
    membership: store_membership::Membership,
}

impl StoreGroup {
    /// Joins group `group` of job `job` in `store`, under a new member id (its join time and
    /// process id, so members sort by join time and a newcomer takes units from the end).
    pub fn join(store: &Store, job: &str, group: &str) -> Result<Self, ClusterError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let id = format!("{nanos:024}-{}", std::process::id());
        let membership = store_membership::Membership::join(store, &group_name(job, group), &id)
            .map_err(|e| ClusterError::new(format!("cannot join group '{group}': {e}")))?;
        Ok(Self { membership })
    }
}

impl Membership for StoreGroup {
    fn name(&self) -> &str {
        self.membership.member_id()
    }

    fn assignment(&self, units: &[UnitId]) -> Result<Assignment, ClusterError> {
        let a = self
            .membership
            .assignment(units)
            .map_err(|e| ClusterError::new(format!("group '{}': {e}", self.membership.group())))?;
        Ok(Assignment {
            generation: a.generation,
            members: a.members,
            mine: a.units,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_share_the_units_and_a_leaving_member_gives_its_share_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = riffle_connectors::rocketmq::shared_store(dir.path()).unwrap();
        let units: Vec<UnitId> = (0..5).map(|unit| UnitId { stage: 0, unit }).collect();
        let a = StoreGroup::join(&store, "job.1", "g").unwrap();
        let b = StoreGroup::join(&store, "job.1", "g").unwrap();
        let (sa, sb) = (a.assignment(&units).unwrap(), b.assignment(&units).unwrap());
        assert_eq!(sa.members.len(), 2);
        assert_eq!(sa.generation, sb.generation);
        assert_eq!(sa.mine.len(), 3);
        assert_eq!([sa.mine.clone(), sb.mine].concat(), units);
        drop(b);
        let after = a.assignment(&units).unwrap();
        assert_eq!(after.mine, units);
        assert_ne!(after.generation, sa.generation);
    }
}
