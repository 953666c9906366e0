//! Advisory file locks (`flock`) that order the processes sharing one data directory.
//!
//! A lock belongs to an open file description: the OS drops it when the holder closes the file
//! or dies, even by `kill -9`, so a crashed process never leaves a lock behind. Two descriptions
//! of the same file exclude each other even inside one process, so threads that each open the
//! lock file (as [`LockedFile::open`] does) are ordered too.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use crate::error::{IoContext, Result};

/// Opens (creating if needed) a lock file for reading and writing.
pub(crate) fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .ctx(|| format!("opening lock file {}", path.display()))
}

/// A lock file held exclusively until this value is dropped.
#[derive(Debug)]
pub(crate) struct LockedFile {
    file: File,
}

impl LockedFile {
    /// Opens `path` and waits for its exclusive lock.
    pub fn open(path: &Path) -> Result<LockedFile> {
        let file = open_lock_file(path)?;
        file.lock().ctx(|| format!("locking {}", path.display()))?;
        Ok(LockedFile { file })
    }

    /// Opens `path` and takes its exclusive lock if nobody holds it.
    pub fn try_open(path: &Path) -> Result<Option<LockedFile>> {
        let file = open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(LockedFile { file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e).ctx(|| format!("locking {}", path.display())),
        }
    }

    /// The locked file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// The exclusive lock of a file that stays open, released when this guard is dropped.
#[derive(Debug)]
pub(crate) struct FlockGuard<'a> {
    file: &'a File,
}

impl<'a> FlockGuard<'a> {
    /// Waits for the exclusive lock of `file` (whose path `path` names in errors).
    pub fn lock(file: &'a File, path: &Path) -> Result<FlockGuard<'a>> {
        file.lock().ctx(|| format!("locking {}", path.display()))?;
        Ok(FlockGuard { file })
    }
}

impl Drop for FlockGuard<'_> {
    fn drop(&mut self) {
        // Unlocking an open file cannot fail in a way the holder could act on; closing the
        // file or the process exiting releases the lock anyway.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_opens_exclude_each_other_in_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = LockedFile::open(&path).unwrap();
        assert!(LockedFile::try_open(&path).unwrap().is_none());
        drop(held);
        assert!(LockedFile::try_open(&path).unwrap().is_some());
    }
}
