//! How a path is spelled as a key: relative, `/`-separated. Every module that turns a path into
//! a key (the walker, the git adapter, code refs, freshness) spells it through here.
//!
//! There are two readings, and only two. Paths people and patches write may use `\` as a
//! separator (typed on Windows, pasted from a tool): [`slash_key`] reads every `\` as `/`.
//! Paths the file system hands back use the platform's separator, and on Unix a `\` is part of
//! a file name: [`native_key`] converts only the platform separator, so the key still names
//! the file.

/// The path with every `\` turned into `/`.
pub fn slash_key(path: &str) -> String {
    path.replace('\\', "/")
}

/// The segments of a path read as [`slash_key`] reads it (empty and `.` segments included).
pub fn segments(path: &str) -> std::str::Split<'_, [char; 2]> {
    path.split(['/', '\\'])
}

/// A path the file system gave, with the platform's separator turned into `/`.
pub fn native_key(path: &str) -> String {
    if std::path::MAIN_SEPARATOR == '/' {
        path.to_owned()
    } else {
        path.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_key_reads_backslashes_as_separators() {
        assert_eq!(slash_key(r"src\state\paths.rs"), "src/state/paths.rs");
        assert_eq!(slash_key("src/lib.rs"), "src/lib.rs");
    }

    #[cfg(unix)]
    #[test]
    fn native_key_keeps_a_backslash_in_a_unix_file_name() {
        assert_eq!(native_key(r"dir/a\b.txt"), r"dir/a\b.txt");
    }
}
