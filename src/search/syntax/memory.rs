//! The bytes tree-sitter holds on each thread, so that a file's parse budget bounds its memory
//! as well as its time; and the memory all parses of the process may be granted at once
//! ([`grant`]), so that parses spread over the cores hold no more together than one command
//! may.
//!
//! tree-sitter allocates through functions the binary hands it (`main.rs`); they report every
//! allocation and release here. The binary also hands over how to give the memory its
//! allocator keeps freed back to the system ([`set_release`]): a grant is returned only after
//! a parse that took much has given it back, since an allocator keeps what a thread freed for
//! that thread, and the next parse, on another core, would otherwise add its memory to it.
//! A parse and its query walk run on one thread, so what this thread's count grew by since the
//! parse started is what the parse holds. Memory released on another thread than it was taken
//! on lowers that thread's count instead: the count of a thread is only ever compared with
//! itself. Where no such allocator is installed (the library's own tests) nothing is counted
//! and only time bounds a parse.

use std::cell::Cell;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::PoisonError;
use std::time::Instant;

use super::tags::Deadline;

/// The most parser memory the parses of one process are granted at once (160 MiB): a file's
/// parse is granted its budget's memory before it starts ([`grant`]), so that however many
/// cores parse at once, and however hostile the files, their trees hold at most this together
/// (no file's budget is larger: [`super::tags::budget`]).
pub const SHARED: usize = 160 << 20;

/// The bytes granted to the parses running now.
static GRANTED: Mutex<usize> = Mutex::new(0);
/// Signalled whenever a grant is returned.
static RETURNED: Condvar = Condvar::new();

/// How the binary gives the memory its allocator keeps freed on this thread back to the
/// system; unset where the binary installed no allocator.
static RELEASE: OnceLock<fn()> = OnceLock::new();

/// A parse that took more than this (8 MiB) gives the memory back when its grant is returned;
/// a smaller one (nearly every file of real code) leaves it to the allocator.
const RELEASE_ABOVE: isize = 8 << 20;

/// Memory granted to one parse until it is dropped: its bytes, and what this thread held when
/// it was granted.
#[must_use = "the grant lasts as long as it is held"]
pub(super) struct Grant {
    bytes: usize,
    start: isize,
}

/// Sets how freed memory goes back to the system (the binary, once, before any parse): called
/// on the parse's thread when a parse that took more than [`RELEASE_ABOVE`] returns its grant.
pub fn set_release(release: fn()) {
    // A second call changes nothing: the first one's function stays.
    let _ = RELEASE.set(release);
}

/// Grants a parse `bytes` of parser memory (at most [`SHARED`]) once the parses running hold
/// little enough to leave room for it, waiting for them until `deadline`; `None` when the
/// deadline passed first. A parse alone is always granted, so nothing waits forever. A thread
/// must not ask again while it holds a grant.
pub(super) fn grant(bytes: usize, deadline: Deadline) -> Option<Grant> {
    let bytes = bytes.min(SHARED);
    let mut granted = GRANTED.lock().unwrap_or_else(PoisonError::into_inner);
    while granted.saturating_add(bytes) > SHARED {
        granted = match deadline.instant() {
            None => RETURNED
                .wait(granted)
                .unwrap_or_else(PoisonError::into_inner),
            Some(at) => {
                let left = at
                    .checked_duration_since(Instant::now())
                    .filter(|left| !left.is_zero())?;
                (RETURNED.wait_timeout(granted, left))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        };
    }
    *granted += bytes;
    let start = held();
    PEAK.with(|peak| peak.set(start));
    Some(Grant { bytes, start })
}

impl Drop for Grant {
    fn drop(&mut self) {
        let took = PEAK.with(Cell::get).saturating_sub(self.start);
        if took > RELEASE_ABOVE
            && let Some(release) = RELEASE.get()
        {
            release();
        }
        let mut granted = GRANTED.lock().unwrap_or_else(PoisonError::into_inner);
        *granted = granted.saturating_sub(self.bytes);
        RETURNED.notify_all();
    }
}

thread_local! {
    /// Bytes taken minus bytes released on this thread (negative when it released more than
    /// it took).
    static HELD: Cell<isize> = const { Cell::new(0) };
    /// The most [`HELD`] has been since this thread's last grant.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Records that tree-sitter took `bytes` on this thread.
pub fn allocated(bytes: usize) {
    let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
    let now = HELD.with(|held| {
        let now = held.get().saturating_add(bytes);
        held.set(now);
        now
    });
    PEAK.with(|peak| peak.set(peak.get().max(now)));
}

/// Records that tree-sitter released `bytes` on this thread.
pub fn released(bytes: usize) {
    let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
    HELD.with(|held| held.set(held.get().saturating_sub(bytes)));
}

/// Bytes tree-sitter took minus bytes it released on this thread so far.
pub(super) fn held() -> isize {
    HELD.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_counts_its_own_bytes() {
        let before = held();
        allocated(100);
        released(30);
        std::thread::spawn(|| {
            allocated(1_000);
            assert_eq!(held(), 1_000);
        })
        .join()
        .expect("thread");
        assert_eq!(held() - before, 70);
        released(70);
        assert_eq!(held(), before);
    }

    /// Calls of the release function set by the test below.
    static RELEASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    #[test]
    fn a_parse_that_took_much_releases_the_memory_before_its_grant_is_returned() {
        set_release(|| {
            RELEASES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let before = RELEASES.load(std::sync::atomic::Ordering::SeqCst);
        let granted = grant(1, Deadline::NONE).expect("a small grant");
        let took = usize::try_from(RELEASE_ABOVE).expect("positive") + 1;
        allocated(took);
        released(took);
        drop(granted);
        assert!(RELEASES.load(std::sync::atomic::Ordering::SeqCst) > before);
    }

    #[test]
    fn grants_never_exceed_the_shared_memory_and_a_parse_alone_always_gets_one() {
        // Other tests parse meanwhile: holding the whole pool keeps them out.
        let whole = grant(SHARED * 2, Deadline::NONE).expect("a parse alone is granted");
        assert_eq!(whole.bytes, SHARED, "at most what is shared");
        let past = Deadline::at(Instant::now());
        assert!(grant(1, past).is_none(), "no room, and the deadline passed");
        // A parse waiting for room starts when the grant is returned.
        std::thread::scope(|scope| {
            let waiting =
                scope.spawn(|| grant(SHARED / 2, Deadline::NONE).map(|grant| grant.bytes));
            drop(whole);
            assert_eq!(waiting.join().expect("thread"), Some(SHARED / 2));
        });
    }
}
