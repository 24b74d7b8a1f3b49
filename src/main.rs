//! The `epiphany` binary: everything lives in the library.

use std::ffi::c_int;
use std::ffi::c_long;
use std::ffi::c_void;
use std::sync::OnceLock;

use epiphany::search::syntax::memory;

// Snapshots decode into tens of thousands of small strings; mimalloc makes that cheap. Its
// version 2: version 3 gives every size class between 84 KiB and 512 KiB a 4 MiB page of its
// own, and with transparent huge pages each one touched costs a 2 MiB page zeroed, which
// doubled the memory and the time of the first read after a merge (bench/store-speed.sh, C).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// tree-sitter's C code allocates and frees a few nodes per token it parses; through glibc's
// allocator that was 7% of parsing and querying a file, through mimalloc 3%. Each call is
// counted for the thread (`search::syntax::memory`), so that a file's parse budget bounds its
// memory: 1.9 million nested arrays in 3.8 MB of JavaScript took 1.3 GB within its time budget.
unsafe extern "C" {
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_calloc(count: usize, size: usize) -> *mut c_void;
    fn mi_realloc(pointer: *mut c_void, size: usize) -> *mut c_void;
    fn mi_free(pointer: *mut c_void);
    fn mi_usable_size(pointer: *const c_void) -> usize;
    fn mi_collect(force: bool);
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
}

/// mimalloc's `mi_option_purge_delay` in its version 2 numbering (libmimalloc-sys does not
/// name it): how many milliseconds freed memory is kept before it goes back to the system.
const PURGE_DELAY: c_int = 15;
/// The purge delay mimalloc started with, read before it is first changed.
static USUAL_PURGE_DELAY: OnceLock<c_long> = OnceLock::new();

// While a large file is parsed, what it frees as its arrays double is given back at once
// rather than after mimalloc's delay (`memory::Allocator::prompt_purge`).
fn prompt_purge(prompt: bool) {
    // SAFETY: mimalloc reads and sets its options at any time, from any thread.
    unsafe {
        let usual = *USUAL_PURGE_DELAY.get_or_init(|| mi_option_get(PURGE_DELAY));
        mi_option_set(PURGE_DELAY, if prompt { 0 } else { usual });
    }
}

// mimalloc keeps the pages a thread freed for that thread, and gives them back to the system
// only later, when that thread allocates again: a parse that took its whole budget on one core
// and then waited for its next file still held it while the next parse, on the other core, took
// as much (`hook session-start` on bench/hostile-repo.sh: 379 MiB for parses granted 138 MiB
// each). A parse that took much gives it back before its grant is returned.
fn release_freed() {
    // SAFETY: collecting the calling thread's heap is valid at any time.
    unsafe { mi_collect(true) }
}

unsafe extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    // SAFETY: mimalloc's functions take any size; the size of a null pointer is 0.
    unsafe {
        let pointer = mi_malloc(size);
        memory::allocated(mi_usable_size(pointer));
        pointer
    }
}

unsafe extern "C" fn counted_calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: as for `counted_malloc`.
    unsafe {
        let pointer = mi_calloc(count, size);
        memory::allocated(mi_usable_size(pointer));
        pointer
    }
}

unsafe extern "C" fn counted_realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: tree-sitter passes null or a pointer these functions returned; on failure the
    // old block is kept, and so is its count.
    unsafe {
        let before = mi_usable_size(pointer);
        let moved = mi_realloc(pointer, size);
        if !moved.is_null() {
            memory::released(before);
            memory::allocated(mi_usable_size(moved));
        }
        moved
    }
}

unsafe extern "C" fn counted_free(pointer: *mut c_void) {
    // SAFETY: tree-sitter frees null or a pointer these functions returned.
    unsafe {
        memory::released(mi_usable_size(pointer));
        mi_free(pointer);
    }
}

fn main() -> std::process::ExitCode {
    // SAFETY: nothing has been allocated by tree-sitter yet, so everything it frees was
    // allocated by these functions; they behave as the C library's do.
    unsafe {
        tree_sitter::set_allocator(
            Some(counted_malloc),
            Some(counted_calloc),
            Some(counted_realloc),
            Some(counted_free),
        );
    }
    memory::set_allocator(memory::Allocator {
        release_freed,
        prompt_purge,
    });
    epiphany::cli::main()
}
