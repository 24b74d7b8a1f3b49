//! The bytes tree-sitter holds on each thread, so that a file's parse budget bounds its memory
//! as well as its time.
//!
//! tree-sitter allocates through functions the binary hands it (`main.rs`); they report every
//! allocation and release here. A parse and its query walk run on one thread, so what this
//! thread's count grew by since the parse started is what the parse holds. Memory released on
//! another thread than it was taken on lowers that thread's count instead: the count of a
//! thread is only ever compared with itself. Where no such allocator is installed (the
//! library's own tests) nothing is counted and only time bounds a parse.

use std::cell::Cell;

thread_local! {
    /// Bytes taken minus bytes released on this thread (negative when it released more than
    /// it took).
    static HELD: Cell<isize> = const { Cell::new(0) };
}

/// Records that tree-sitter took `bytes` on this thread.
pub fn allocated(bytes: usize) {
    let bytes = isize::try_from(bytes).unwrap_or(isize::MAX);
    HELD.with(|held| held.set(held.get().saturating_add(bytes)));
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
}
