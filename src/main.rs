//! The `epiphany` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    epiphany::cli::main()
}
