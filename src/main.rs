//! The `epiphany` binary: everything lives in the library.

// Snapshots decode into tens of thousands of small strings; mimalloc makes that cheap.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    epiphany::cli::main()
}
