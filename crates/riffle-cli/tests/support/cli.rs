//! Running the `riffle` binary from integration tests: a command in a working directory, a
//! run that must succeed, and a working directory removed when the test ends.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `riffle ARGS` in `dir`, with no standard input.
pub fn riffle(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_riffle"));
    command.args(args).current_dir(dir).stdin(Stdio::null());
    command
}

/// Runs `riffle ARGS` in `dir`, fails the test unless it succeeds, and returns its output
/// (the time it took goes to the test log).
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let started = std::time::Instant::now();
    let out = riffle(dir, args).output().expect("run riffle");
    assert!(
        out.status.success(),
        "riffle {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("riffle {args:?}: {} ms", started.elapsed().as_millis());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh working directory, removed when dropped.
pub struct WorkDir(pub PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
