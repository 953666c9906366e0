//! Who runs which unit, and which units are done.
//!
//! A unit runs in one process at a time: its owner holds it from before it restores its
//! checkpoint until after its last commit, and a process that may have lost it checks before
//! every commit ([`Coordination::still_owns`]) so a stale owner never publishes.
//!
//! - [`FileCoordination`] (embedded store, processes on one machine): a unit's owner holds an
//!   exclusive `flock` on `<unit>.lock` in the job's `.cluster` directory, which the kernel
//!   drops when the process dies; a finished unit leaves `<unit>.finished` there.
//! - [`crate::coord_log::CoordLog`] (a real RocketMQ cluster, processes on any machines): the
//!   same through a one-queue topic that every process appends to and reads.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use crate::units::UnitId;
use crate::ClusterError;

/// Keeps a unit owned until dropped.
pub struct UnitGuard {
    _held: Box<dyn Send + Sync>,
}

impl UnitGuard {
    /// A guard releasing the unit when `held` is dropped.
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        Self {
            _held: Box::new(held),
        }
    }
}

/// Ownership and completion of a job's units, shared by all its processes.
pub trait Coordination: Send + Sync {
    /// Takes `unit` for this process unless another process owns it.
    fn try_acquire(&self, unit: UnitId) -> Result<Option<UnitGuard>, ClusterError>;
    /// Whether this process still owns `unit` and may commit its checkpoint now.
    fn still_owns(&self, unit: UnitId) -> Result<bool, ClusterError>;
    /// Records that `unit` finished its bounded input.
    fn mark_finished(&self, unit: UnitId) -> Result<(), ClusterError>;
    /// Whether `unit` finished (in any process).
    fn is_finished(&self, unit: UnitId) -> Result<bool, ClusterError>;
}

/// Unit locks and finished marks as files of the job's `.cluster` directory.
pub struct FileCoordination {
    dir: PathBuf,
}

impl FileCoordination {
    /// Locks and marks in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn finished_mark(&self, unit: UnitId) -> PathBuf {
        self.dir.join(format!("{unit}.finished"))
    }

    fn create_dir(&self) -> Result<(), ClusterError> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| ClusterError::new(format!("cannot create {}: {e}", self.dir.display())))
    }
}

impl Coordination for FileCoordination {
    fn try_acquire(&self, unit: UnitId) -> Result<Option<UnitGuard>, ClusterError> {
        self.create_dir()?;
        let path = self.dir.join(format!("{unit}.lock"));
        let file: File = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| ClusterError::new(format!("cannot open {}: {e}", path.display())))?;
        Ok(file.try_lock().ok().map(|()| UnitGuard::new(file)))
    }

    fn still_owns(&self, _unit: UnitId) -> Result<bool, ClusterError> {
        // The lock is held until the unit's task ends: no other process can own it meanwhile.
        Ok(true)
    }

    fn mark_finished(&self, unit: UnitId) -> Result<(), ClusterError> {
        self.create_dir()?;
        let path = self.finished_mark(unit);
        File::create(&path)
            .map(|_| ())
            .map_err(|e| ClusterError::new(format!("cannot create {}: {e}", path.display())))
    }

    fn is_finished(&self, unit: UnitId) -> Result<bool, ClusterError> {
        Ok(self.finished_mark(unit).exists())
    }
}
