//! The bytes tree-sitter holds on each thread, so that a file's parse budget bounds its memory
//! as well as its time; and the memory all parses of the process may be granted at once
//! ([`grant`]), so that parses spread over the cores hold no more together than one command
//! may.
//!
//! tree-sitter allocates through functions the binary hands it (`main.rs`); they report every
//! allocation and release here. The binary also hands over how to give the memory its
//! allocator keeps freed back to the system ([`set_allocator`]): a grant is returned only after
//! a parse that took much has given it back, since an allocator keeps what a thread freed for
//! that thread, and the next parse, on another core, would otherwise add its memory to it;
//! and while a large file is parsed, the allocator gives back what is freed at once.
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

/// The parses running now.
struct Running {
    /// The bytes granted to them.
    granted: usize,
    /// How many of them were granted at least [`PROMPT_ABOVE`].
    large: usize,
}

static RUNNING: Mutex<Running> = Mutex::new(Running {
    granted: 0,
    large: 0,
});
/// Signalled whenever a grant is returned.
static RETURNED: Condvar = Condvar::new();

/// How the binary's allocator gives back what it keeps freed; unset where the binary
/// installed no allocator.
static ALLOCATOR: OnceLock<Allocator> = OnceLock::new();

/// What the binary's allocator can be asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Allocator {
    /// Gives the memory kept freed on the calling thread back to the system.
    pub release_freed: fn(),
    /// Has freed memory given back to the system at once (`true`) or after the allocator's
    /// usual delay (`false`).
    pub prompt_purge: fn(bool),
}

/// Parses granted at least this much (64 MiB: a file of 384 KiB or more) have freed memory
/// given back at once while they run. Such a parse frees as it grows (tree-sitter moves an
/// array each time it doubles), and what is freed and not yet given back is counted by no
/// budget: `hook session-start` on bench/hostile-repo.sh peaked at 203-217 MiB over thirteen
/// runs (254 once before), 202-206 MiB with this. Giving freed memory back at once costs every
/// command time (a fresh clone's first read 26% slower), so only these parses ask for it.
const PROMPT_ABOVE: usize = 64 << 20;

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

/// Sets how freed memory goes back to the system (the binary, once, before any parse):
/// released on the parse's thread when a parse that took more than [`RELEASE_ABOVE`] returns
/// its grant, and promptly while parses granted [`PROMPT_ABOVE`] run.
pub fn set_allocator(allocator: Allocator) {
    // A second call changes nothing: the first one's functions stay.
    let _ = ALLOCATOR.set(allocator);
}

/// Grants a parse `bytes` of parser memory (at most [`SHARED`]) once the parses running hold
/// little enough to leave room for it, waiting for them until `deadline`; `None` when the
/// deadline passed first. A parse alone is always granted, so nothing waits forever. A thread
/// must not ask again while it holds a grant.
pub(super) fn grant(bytes: usize, deadline: Deadline) -> Option<Grant> {
    let bytes = bytes.min(SHARED);
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    while running.granted.saturating_add(bytes) > SHARED {
        running = match deadline.instant() {
            None => RETURNED
                .wait(running)
                .unwrap_or_else(PoisonError::into_inner),
            Some(at) => {
                let left = at
                    .checked_duration_since(Instant::now())
                    .filter(|left| !left.is_zero())?;
                (RETURNED.wait_timeout(running, left))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        };
    }
    running.granted += bytes;
    if bytes >= PROMPT_ABOVE {
        running.large += 1;
        if running.large == 1
            && let Some(allocator) = ALLOCATOR.get()
        {
            (allocator.prompt_purge)(true);
        }
    }
    drop(running);
    let start = held();
    PEAK.with(|peak| peak.set(start));
    Some(Grant { bytes, start })
}

impl Drop for Grant {
    fn drop(&mut self) {
        let took = PEAK.with(Cell::get).saturating_sub(self.start);
        let allocator = ALLOCATOR.get();
        if took > RELEASE_ABOVE
            && let Some(allocator) = allocator
        {
            (allocator.release_freed)();
        }
        let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
        running.granted = running.granted.saturating_sub(self.bytes);
        if self.bytes >= PROMPT_ABOVE {
            running.large = running.large.saturating_sub(1);
            if running.large == 0
                && let Some(allocator) = allocator
            {
                (allocator.prompt_purge)(false);
            }
        }
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

    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::SeqCst;

    /// Calls of the release function [`counting_allocator`] sets.
    static RELEASES: AtomicUsize = AtomicUsize::new(0);
    /// What its purge function was last asked.
    static PROMPT: AtomicBool = AtomicBool::new(false);
    /// Held by the tests that take large grants, so that one sees the others' none.
    static LARGE_GRANTS: Mutex<()> = Mutex::new(());

    /// Sets an allocator that counts what it is asked.
    fn counting_allocator() {
        set_allocator(Allocator {
            release_freed: || {
                RELEASES.fetch_add(1, SeqCst);
            },
            prompt_purge: |prompt| PROMPT.store(prompt, SeqCst),
        });
    }

    #[test]
    fn a_parse_that_took_much_releases_the_memory_before_its_grant_is_returned() {
        counting_allocator();
        let before = RELEASES.load(SeqCst);
        let granted = grant(1, Deadline::NONE).expect("a small grant");
        let took = usize::try_from(RELEASE_ABOVE).expect("positive") + 1;
        allocated(took);
        released(took);
        drop(granted);
        assert!(RELEASES.load(SeqCst) > before);
    }

    #[test]
    fn freed_memory_is_given_back_at_once_while_a_large_file_is_parsed() {
        let _alone = LARGE_GRANTS.lock().unwrap_or_else(PoisonError::into_inner);
        counting_allocator();
        let small = grant(PROMPT_ABOVE - 1, Deadline::NONE).expect("a grant");
        assert!(!PROMPT.load(SeqCst), "not for a smaller file");
        let large = grant(PROMPT_ABOVE, Deadline::NONE).expect("a grant");
        assert!(PROMPT.load(SeqCst));
        drop(small);
        assert!(PROMPT.load(SeqCst), "while the large parse runs");
        drop(large);
        assert!(
            !PROMPT.load(SeqCst),
            "back to the usual delay once it is done"
        );
    }

    #[test]
    fn grants_never_exceed_the_shared_memory_and_a_parse_alone_always_gets_one() {
        let _alone = LARGE_GRANTS.lock().unwrap_or_else(PoisonError::into_inner);
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
