//! The `epiphany` binary: everything lives in the library.

// Snapshots decode into tens of thousands of small strings; mimalloc makes that cheap. Its
// version 2: version 3 gives every size class between 84 KiB and 512 KiB a 4 MiB page of its
// own, and with transparent huge pages each one touched costs a 2 MiB page zeroed, which
// doubled the memory and the time of the first read after a merge (bench/store-speed.sh, C).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    epiphany::cli::main()
}
