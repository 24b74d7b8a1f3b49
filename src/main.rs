//! The `epiphany` binary: everything lives in the library.

// Snapshots decode into tens of thousands of small strings; mimalloc makes that cheap.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // mimalloc asks for transparent huge pages on the memory it maps. A command lives for a
    // few milliseconds: zeroing whole 2 MiB pages it barely uses cost more than the work, and
    // where the kernel compacts memory to find one (`defrag=madvise`), a read stalled for tens
    // of milliseconds. Small pages make every command faster and steadier.
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` only sets a flag of this process; it
    // reads no memory of ours and cannot fail in a way that matters (huge pages stay allowed).
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    epiphany::cli::main()
}
