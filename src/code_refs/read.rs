//! Reading cited files: the one bounded path every command that re-reads them takes. A file is
//! read only inside the repository and only when it is a regular file; a file over the size
//! limit is streamed for what its references ask, never held or parsed; every parse shares the
//! command's deadline and, with a cache, is skipped for contents parsed before.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::policy::code_map::Definition;
use crate::policy::code_ref::Asked;
use crate::policy::code_ref::Cited;
use crate::policy::code_ref::CitedFile;
use crate::policy::code_ref::LineDigest;
use crate::policy::code_ref::Scan;
use crate::policy::code_ref::Text;
use crate::policy::code_ref::escape_reason;
use crate::policy::code_ref::scan_bytes;
use crate::policy::recheck::CitedFiles;
use crate::search::definitions::DefinitionCache;
use crate::search::syntax;
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
use crate::state::git;
use crate::state::paths::slash_key;
use crate::state::walk::MAX_FILE_BYTES;

/// Whether a cited file's contents are larger than the index takes ([`MAX_FILE_BYTES`]), so
/// that no read parses them.
fn is_over_parse_limit(bytes: &[u8]) -> bool {
    u64::try_from(bytes.len()).map_or(true, |len| len > MAX_FILE_BYTES)
}

/// Reads every wanted path under `root`: what is there, its line count, and where each
/// symbol occurs. Paths that would leave the root read as missing, and links that lead out of
/// it as [`CitedFile::Elsewhere`]. A file citing a symbol in a parsed language is parsed for its
/// definitions, exactly as the write path parses it, so that both judge a reference alike;
/// with `cache`, only files whose contents it has not seen are parsed (the others' definitions
/// are the ones parsing gave for the same bytes). This is the one bounded path every command
/// that re-reads cited files takes: a file over the size limit ([`MAX_FILE_BYTES`]) is streamed
/// for what `wanted` asks of it, not parsed, and named in [`CitedFiles::by_lines`] (when it
/// cites a symbol in a parsed language), and every parse shares the command's
/// `deadline`: a file it cuts short is named in [`CitedFiles::unjudged`].
pub fn read_cited_files(
    root: &Path,
    wanted: &BTreeMap<String, Asked>,
    cache: Option<&DefinitionCache>,
    deadline: Deadline,
) -> CitedFiles {
    let parser = Parser { cache, deadline };
    let mut cited = CitedFiles::default();
    for (path, (file, parse)) in read_files(root, wanted, parser) {
        match parse {
            Parse::Done => {}
            Parse::Late => {
                cited.unjudged.insert(path.clone());
            }
            Parse::TooLarge => {
                cited.by_lines.insert(path.clone());
            }
        }
        cited.files.insert(path, file);
    }
    cited
}

/// What became of a cited file's parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parse {
    /// Parsed, or not asked for (no symbol cited, a language that is not parsed, not a file).
    Done,
    /// The command's deadline passed first: its symbols were not judged.
    Late,
    /// Over the size limit ([`MAX_FILE_BYTES`]): judged by the lines its symbols occur on.
    TooLarge,
}

/// How the cited files of a parsed language are parsed: afresh or through the cache of earlier
/// parses, within the command's deadline.
#[derive(Debug, Clone, Copy)]
pub(super) struct Parser<'a> {
    cache: Option<&'a DefinitionCache>,
    deadline: Deadline,
}

impl Parser<'_> {
    /// Parses everything it is asked to.
    pub(super) const FRESH: Parser<'static> = Parser {
        cache: None,
        deadline: Deadline::NONE,
    };

    fn definitions(self, path: &str, text: &str) -> Result<Option<Vec<Definition>>, Late> {
        match self.cache {
            None => syntax::definitions_by(path, text, self.deadline),
            Some(cache) => cache.definitions(path, text, self.deadline),
        }
    }
}

/// The most of an earlier version of a cited file that is read from git (16 MiB).
const EARLIER_FILE_LIMIT: usize = 16 * 1024 * 1024;

/// A cited file as a commit held it: (commit, path), the symbols cited, its contents.
type EarlierFile<'a> = (&'a (String, String), &'a BTreeSet<String>, &'a Vec<u8>);

/// Cited files as commits held them, read from git and parsed like the work tree's:
/// (commit, cited path) → the symbols cited there, as
/// [`crate::policy::freshness::definitions_to_compare`] asks. A commit git lacks is read at
/// its stand-in in `stand_ins` (where its records entered the branch); what git cannot give,
/// a language that is not parsed, or a parse the command's `deadline` cut short, is left out.
pub fn read_cited_files_at(
    root: &Path,
    wanted: &BTreeMap<(String, String), BTreeSet<String>>,
    stand_ins: &BTreeMap<String, String>,
    deadline: Deadline,
) -> BTreeMap<(String, String), CitedFile> {
    let commit_of = |commit: &String| stand_ins.get(commit).unwrap_or(commit).clone();
    let blobs: BTreeSet<(String, String)> = (wanted.keys())
        .filter(|(_, path)| syntax::grammar(path).is_some())
        .map(|(commit, path)| (commit_of(commit), slash_key(path)))
        .collect();
    let contents = git::files_at(root, &blobs, EARLIER_FILE_LIMIT);
    let found: Vec<EarlierFile<'_>> = (wanted.iter())
        .filter_map(|(key, symbols)| {
            let bytes = contents.get(&(commit_of(&key.0), slash_key(&key.1)))?;
            Some((key, symbols, bytes))
        })
        .collect();
    // Parsed over the cores, like the work tree's files.
    crate::parallel::map_chunks(&found, |piece| {
        let parser = Parser {
            cache: None,
            deadline,
        };
        (piece.iter())
            .filter_map(|(key, symbols, bytes)| {
                match read_contents(&key.1, Arc::from(&bytes[..]), symbols, Some(parser)) {
                    (_, Parse::Late) => None,
                    (file, Parse::Done | Parse::TooLarge) => Some(((*key).clone(), file)),
                }
            })
            .collect()
    })
    .into_iter()
    .collect()
}

/// Every wanted file as [`read_file`] reads it, and what became of its parse.
pub(super) fn read_files(
    root: &Path,
    wanted: &BTreeMap<String, Asked>,
    parser: Parser<'_>,
) -> HashMap<String, (CitedFile, Parse)> {
    // Links are resolved against the root as the file system has it (it may lie below a link).
    let Ok(real_root) = root.canonicalize() else {
        return wanted
            .keys()
            .map(|path| (path.clone(), (CitedFile::Missing, Parse::Done)))
            .collect();
    };
    // Files citing a symbol in a parsed language are parsed: spread over the cores, with one
    // buffer per thread (hundreds of cited files cost no more allocations than one).
    let entries: Vec<(&String, &Asked, Option<Parser<'_>>)> = wanted
        .iter()
        .map(|(path, asked)| {
            let parse = !asked.symbols.is_empty() && syntax::grammar(path).is_some();
            (path, asked, parse.then_some(parser))
        })
        .collect();
    let parsed = entries
        .iter()
        .filter(|(_, _, parse)| parse.is_some())
        .count();
    crate::parallel::map_chunks_on(&entries, parsed.div_ceil(8), |piece| {
        let mut buffer = Vec::new();
        (piece.iter())
            .map(|&(path, asked, parse)| {
                let cited = read_file(&real_root, path, asked, parse, &mut buffer);
                (path.clone(), cited)
            })
            .collect()
    })
    .into_iter()
    .collect()
}

/// The bytes a cited file over the size limit is read in at a time (256 KiB).
const STREAM_CHUNK_BYTES: usize = 256 * 1024;

/// Reads `path` below `real_root` (itself resolved). A path is followed through symbolic links
/// only while it stays inside the root, and only a regular file is read: a committed link to
/// `/dev/zero` or to a file outside the repository is [`CitedFile::Elsewhere`], never opened.
/// Says too what became of its parse. A file over the size limit ([`MAX_FILE_BYTES`]) is never
/// held: it is streamed ([`stream`]) and judged by its lines, never parsed (its parse is
/// [`Parse::TooLarge`] when `parse` asked for one).
fn read_file(
    real_root: &Path,
    path: &str,
    asked: &Asked,
    parse: Option<Parser<'_>>,
    buffer: &mut Vec<u8>,
) -> (CitedFile, Parse) {
    let (mut file, len) = match open_below(real_root, path) {
        Ok(opened) => opened,
        Err(unread) => return (unread, Parse::Done),
    };
    if len > MAX_FILE_BYTES {
        let not_parsed = if parse.is_some() {
            Parse::TooLarge
        } else {
            Parse::Done
        };
        return match stream(file, len, asked) {
            Some(streamed) => (streamed, not_parsed),
            None => (CitedFile::Missing, Parse::Done),
        };
    }
    buffer.clear();
    if file.read_to_end(buffer).is_err() {
        return (CitedFile::Missing, Parse::Done);
    }
    read_contents(path, Arc::from(&buffer[..]), &asked.symbols, parse)
}

/// Streams the `len` bytes of `file` in chunks of [`STREAM_CHUNK_BYTES`] through a [`Scan`]
/// taking what `asked` asks, so that only the texts its references may cite are kept (as their
/// fingerprints and, when asked, first lines), never the file. `None` when it cannot be read,
/// or holds another size now than it did when opened (it changed while being read).
///
/// The whole file's fingerprint, when a reference cites the whole file and no excerpt is
/// asked, is taken on a thread of its own as the chunks pass: its SHA-256 over a 200 MB file
/// took as long as the rest of the scan, and every read of a state citing a symbol in such a
/// file without lines takes it.
fn stream(mut file: std::fs::File, len: u64, asked: &Asked) -> Option<CitedFile> {
    let apart = !asked.excerpts && asked.texts.contains(&Cited::File);
    let mut rest = asked.clone();
    if apart {
        rest.texts.remove(&Cited::File);
    }
    let mut scan = Scan::taking(&rest);
    let (chunks, whole_file) = std::sync::mpsc::sync_channel::<Arc<[u8]>>(4);
    std::thread::scope(|scope| {
        let whole = apart.then(|| {
            scope.spawn(move || {
                let mut digest = LineDigest::default();
                for chunk in whole_file {
                    digest.take_chunk(&chunk);
                }
                digest.finish()
            })
        });
        let mut chunk = vec![0; STREAM_CHUNK_BYTES];
        let mut read: u64 = 0;
        let complete = loop {
            let got = match file.read(&mut chunk) {
                Ok(0) => break read == len,
                Ok(got) => got,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break false,
            };
            read = read.saturating_add(u64::try_from(got).unwrap_or(u64::MAX));
            if read > len {
                break false;
            }
            scan.feed(&chunk[..got]);
            if whole.is_some() && chunks.send(Arc::from(&chunk[..got])).is_err() {
                break false;
            }
        };
        drop(chunks);
        let whole = whole.map(|digest| digest.join().ok());
        let mut cited = scan.finish();
        if let (Some(digest), CitedFile::File { text, .. }) = (whole, &mut cited) {
            let (Some(digest), Text::Taken(taken)) = (digest, text) else {
                return None;
            };
            Arc::make_mut(taken)
                .fingerprints
                .insert(Cited::File, digest);
        }
        complete.then_some(cited)
    })
}

/// Opens `path` below `real_root` (itself resolved) with its size, or says what is there
/// instead.
fn open_below(real_root: &Path, path: &str) -> Result<(std::fs::File, u64), CitedFile> {
    if escape_reason(path).is_some() {
        return Err(CitedFile::Missing);
    }
    let Ok(resolved) = real_root.join(path).canonicalize() else {
        return Err(CitedFile::Missing);
    };
    if !resolved.starts_with(real_root) {
        return Err(CitedFile::Elsewhere);
    }
    match std::fs::metadata(&resolved) {
        Ok(meta) if meta.is_dir() => return Err(CitedFile::Directory),
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(CitedFile::Elsewhere),
        Err(_) => return Err(CitedFile::Missing),
    }
    let Ok(file) = std::fs::File::open(&resolved) else {
        return Err(CitedFile::Missing);
    };
    // What was opened is checked again: the path may have been swapped since it was resolved.
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok((file, meta.len())),
        _ => Err(CitedFile::Elsewhere),
    }
}

/// What `text`, the contents of `path`, says about `symbols`: where each occurs, and with a
/// `parse`r, where the language is parsed and the file is no larger than the index takes
/// ([`MAX_FILE_BYTES`]), their definitions (a symbol means its definition). A larger file is
/// judged by its lines and mentions, as a language that is not parsed: a committed reference
/// to a huge file must not make every read parse it. A file the parser's deadline cut short
/// has no definitions either; which of the two happened is said.
fn read_contents(
    path: &str,
    text: Arc<[u8]>,
    symbols: &BTreeSet<String>,
    parse: Option<Parser<'_>>,
) -> (CitedFile, Parse) {
    let scanned = scan_bytes(Arc::clone(&text), symbols);
    let Some(parser) = parse else {
        return (scanned, Parse::Done);
    };
    if is_over_parse_limit(&text) {
        return (scanned, Parse::TooLarge);
    }
    let parsed = (std::str::from_utf8(&text).ok()).map(|text| parser.definitions(path, text));
    match parsed {
        Some(Ok(Some(definitions))) => (scanned.with_definitions(&definitions), Parse::Done),
        Some(Err(Late)) => (scanned, Parse::Late),
        Some(Ok(None)) | None => (scanned, Parse::Done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::code_ref::fingerprint_in;
    use crate::state::model::CodeRef;

    /// A cited file over the size limit is streamed, never held: judged by its lines, it keeps
    /// only the fingerprints of what its references cite, the ones the file held whole gives.
    #[test]
    fn a_file_over_the_size_limit_is_streamed_and_judged_by_its_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let line = "pub fn g() -> u32 { 0 }\n";
        let lines = usize::try_from(MAX_FILE_BYTES).expect("size") / line.len() + 1;
        let text = format!("pub fn wanted() {{}}\n{}", line.repeat(lines));
        std::fs::write(dir.path().join("huge.rs"), &text).expect("write");
        std::fs::write(dir.path().join("small.rs"), "pub fn wanted() {}\n").expect("write");
        let cite = |path: &str, lines: Option<(u32, u32)>, symbol: &str| CodeRef {
            start_line: lines.map(|(start, _)| start),
            end_line: lines.map(|(_, end)| end),
            symbol: Some(symbol.to_owned()),
            ..CodeRef::to_path(path)
        };
        let refs = [
            cite("huge.rs", None, "wanted"),
            cite("huge.rs", Some((1000, 1002)), "g"),
            cite("huge.rs", Some((1, 1)), "wanted"),
        ];
        let mut asked = Asked::default();
        refs.iter().for_each(|code_ref| asked.cite(code_ref));
        let wanted = BTreeMap::from([
            ("huge.rs".to_owned(), asked.clone()),
            ("small.rs".to_owned(), asked.clone()),
        ]);
        let read = read_files(dir.path(), &wanted, Parser::FRESH);
        let (huge, parse) = &read["huge.rs"];
        assert_eq!(*parse, Parse::TooLarge);
        assert_eq!(huge.lines_of("wanted"), &[1]);
        assert_eq!(huge.definitions_of("wanted"), None, "not parsed");
        let CitedFile::File {
            text: Text::Taken(_),
            line_count,
            ..
        } = huge
        else {
            panic!("kept whole");
        };
        assert_eq!(*line_count, u32::try_from(lines + 1).expect("lines"));
        let whole = scan_bytes(Arc::from(text.as_bytes()), &asked.symbols);
        for code_ref in &refs {
            let streamed = fingerprint_in(code_ref, huge);
            assert!(streamed.is_some(), "{code_ref:?}");
            assert_eq!(streamed, fingerprint_in(code_ref, &whole), "{code_ref:?}");
        }
        let (small, parse) = &read["small.rs"];
        assert_eq!(*parse, Parse::Done);
        assert_eq!(small.definitions_of("wanted"), Some(vec![(1, 1)]));
    }

    #[test]
    fn a_file_that_changed_size_while_read_is_not_taken() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.rs");
        std::fs::write(&path, "0123456789").expect("write");
        let open = || std::fs::File::open(&path).expect("open");
        let asked = Asked::default();
        let Some(CitedFile::File { line_count, .. }) = stream(open(), 10, &asked) else {
            panic!("not taken");
        };
        assert_eq!(line_count, 1);
        assert_eq!(stream(open(), 4, &asked), None, "longer now");
        assert_eq!(stream(open(), 12, &asked), None, "shorter now");
    }
}
