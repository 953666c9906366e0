//! Leases: a writer keeps a queue's cross-process lock between appends for a short while.
//!
//! Taking the queue's `flock` and checking the files costs four system calls per append, which
//! is most of the cost of a small append. While a process holds the lock continuously nobody
//! else can change the queue, so its view stays exact and it may append without any of that.
//! The lock is therefore kept as a *lease* after an append, and a keeper thread releases
//! leases older than [`LEASE`] — then pauses briefly ([`HANDOVER_PAUSE`], holding the queue's
//! in-process writer lock) so that a process waiting for the lock gets it before this one
//! re-takes it. Other processes thus wait at most about one lease for a queue that this one
//! writes. Readers and maintenance never keep a lease.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The longest a writer keeps a queue's lock after it took it.
pub(crate) const LEASE: Duration = Duration::from_millis(20);
/// How long the keeper holds a queue's writer lock after releasing its lease.
pub(crate) const HANDOVER_PAUSE: Duration = Duration::from_micros(200);

/// The number of leases a store holds, so that the keeper sleeps while there are none.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    held: usize,
    stop: bool,
}

impl Leases {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A queue took a lease.
    pub fn taken(&self) {
        let mut s = self.state();
        s.held += 1;
        if s.held == 1 {
            self.wake.notify_all();
        }
    }

    /// A queue released its lease.
    pub fn released(&self) {
        let mut s = self.state();
        s.held = s.held.saturating_sub(1);
    }

    /// Makes [`Leases::wait_for_expiry`] return `false`.
    pub fn stop(&self) {
        self.state().stop = true;
        self.wake.notify_all();
    }

    /// Waits until a lease is held and then half a lease more; `false` once the store stops.
    pub fn wait_for_expiry(&self) -> bool {
        let s = self.state();
        let s = self
            .wake
            .wait_while(s, |s| s.held == 0 && !s.stop)
            .unwrap_or_else(|e| e.into_inner());
        if s.stop {
            return false;
        }
        let (s, _) = self
            .wake
            .wait_timeout_while(s, LEASE / 2, |s| !s.stop)
            .unwrap_or_else(|e| e.into_inner());
        !s.stop
    }
}
