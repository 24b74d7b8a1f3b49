//! The `epiphany` binary: everything lives in the library.

// Snapshots decode into tens of thousands of small strings; mimalloc makes that cheap. Its
// version 2: version 3 gives every size class between 84 KiB and 512 KiB a 4 MiB page of its
// own, and with transparent huge pages each one touched costs a 2 MiB page zeroed, which
// doubled the memory and the time of the first read after a merge (bench/store-speed.sh, C).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// tree-sitter's C code allocates and frees a few nodes per token it parses; through glibc's
// allocator that was 7% of parsing and querying a file, through mimalloc 3%.
unsafe extern "C" {
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_calloc(count: usize, size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(pointer: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    fn mi_free(pointer: *mut std::ffi::c_void);
}

fn main() -> std::process::ExitCode {
    // SAFETY: nothing has been allocated by tree-sitter yet, so everything it frees was
    // allocated by these functions; they behave as the C library's do.
    unsafe {
        tree_sitter::set_allocator(
            Some(mi_malloc),
            Some(mi_calloc),
            Some(mi_realloc),
            Some(mi_free),
        );
    }
    epiphany::cli::main()
}
