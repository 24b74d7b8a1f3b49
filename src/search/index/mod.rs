//! The tantivy side of retrieval: the schema, the persistent index under
//! `.epiphany/cache/retrieval/` with its manifest, incremental and full builds, and the
//! throw-away in-memory index used when there is no usable persistent one.
//!
//! One document per chunk: `file_id` (indexed and fast, so a file's chunks are deleted by one
//! term and results are grouped per file without touching the doc store), `start_line` and
//! `end_line` (fast), and `body` and `path`, both analyzed with the code tokenizer, with
//! frequencies but no positions and no stored text (excerpts are read from the files).
//!
//! Generations: every build writes a complete index and its manifest into a directory of its
//! own, `gen-<N>/`, and then publishes it by replacing the one-line file `CURRENT` atomically.
//! An incremental build starts its directory from hard links to the previous generation's
//! segment files (tantivy never modifies a segment file; new deletes and segments are new
//! files), so it costs what the changed files cost. A reader reads `CURRENT` and opens that
//! generation: it always sees a complete index with the manifest that describes it, never a
//! half-written one, however a build is timed against it or interrupted. The previous
//! generation is kept until the next build, so a reader that read `CURRENT` just before a
//! switch still finds its files; one that loses that race anyway retries with the new
//! `CURRENT`. Builds take an exclusive lock on `retrieval/lock`; concurrent `index` runs fail
//! fast instead of interleaving.
//!
//! Chunk vectors: a build given an embedding model ([`SemanticSetting`]) also writes
//! `gen-<N>/vectors.bin` ([`crate::search::vectors`]) and records the model in the manifest, so
//! the next build keeps using it. An incremental build copies the vectors of unchanged files
//! from the previous generation and embeds changed files only; a different model (or vector
//! chunk shape) embeds every file again.
//!
//! This file holds the schema, the documents a file's chunks become and the in-memory index;
//! the rest lives beside it: `layout` (paths, `CURRENT`, generations, the lock), `open` (the
//! published generation, checked), `build` (the steps of a build), `plan` (what a build
//! indexes), `write` (documents into the writer) and `embedding` (the chunk vectors).

use anyhow::Context;
use anyhow::Result;
use tantivy::Index;
use tantivy::TantivyDocument;
use tantivy::schema::FAST;
use tantivy::schema::Field;
use tantivy::schema::INDEXED;
use tantivy::schema::IndexRecordOption;
use tantivy::schema::Schema;
use tantivy::schema::TextFieldIndexing;
use tantivy::schema::TextOptions;

use crate::search::CHUNK_SHAPE;
use crate::search::chunk;
use crate::search::symbols;
use crate::search::syntax::Deadline;
use crate::search::syntax::Late;
use crate::search::tokenize;

mod build;
mod embedding;
mod layout;
mod open;
mod plan;
mod write;

pub use build::Built;
pub use build::CANCELLED;
pub use build::Progress;
pub use build::build;
pub use embedding::SemanticSetting;
pub use embedding::vectors_fingerprint;
pub use layout::Layout;
pub use layout::MANIFEST_LIMIT;
pub use open::Opened;
pub use open::Persistent;
pub use open::open;
pub use open::searcher;
pub use plan::BuildMode;

/// The fields of the chunk schema.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// The file's id in the manifest (or in an in-memory corpus).
    pub file_id: Field,
    /// First line of the chunk.
    pub start_line: Field,
    /// Last line of the chunk.
    pub end_line: Field,
    /// The chunk's text.
    pub body: Field,
    /// The file's path.
    pub path: Field,
    /// The normalised names ([`symbols::normalize`]) of the definitions in the chunk.
    pub defs: Field,
}

/// The chunk schema.
pub fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let analyzed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(tokenize::ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        file_id: builder.add_u64_field("file_id", INDEXED | FAST),
        start_line: builder.add_u64_field("start_line", FAST),
        end_line: builder.add_u64_field("end_line", FAST),
        body: builder.add_text_field("body", analyzed.clone()),
        path: builder.add_text_field("path", analyzed),
        defs: builder.add_text_field(
            "defs",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(tokenize::NAMES)
                    .set_index_option(IndexRecordOption::WithFreqs),
            ),
        ),
    };
    (builder.build(), fields)
}

fn with_analyzer(index: Index) -> Index {
    index
        .tokenizers()
        .register(tokenize::ANALYZER, tokenize::analyzer());
    index
        .tokenizers()
        .register(tokenize::NAMES, tokenize::names_analyzer());
    index
}

/// The documents of one file's chunks.
pub fn chunk_documents<'a>(
    fields: &'a Fields,
    file_id: u64,
    path: &'a str,
    text: &'a str,
    definitions: &'a [symbols::Definition],
) -> impl Iterator<Item = TantivyDocument> + 'a {
    chunk::chunks(text, CHUNK_SHAPE)
        .into_iter()
        .map(move |chunk| {
            let mut doc = TantivyDocument::default();
            doc.add_u64(fields.file_id, file_id);
            doc.add_u64(fields.start_line, u64::from(chunk.start_line));
            doc.add_u64(fields.end_line, u64::from(chunk.end_line));
            doc.add_text(fields.body, chunk.text);
            doc.add_text(fields.path, path);
            let names: Vec<String> = definitions
                .iter()
                .filter(|definition| (chunk.start_line..=chunk.end_line).contains(&definition.line))
                .map(|definition| symbols::normalize(&definition.name))
                .collect();
            doc.add_text(fields.defs, names.join(" "));
            doc
        })
}

/// A throw-away index of some files, searched when the persistent one is missing, unusable, or
/// does not cover them (dirty files). File ids are positions in `paths`.
pub struct InMemory {
    /// The index.
    pub index: Index,
    /// Chunks indexed.
    pub chunk_count: u64,
    /// Files indexed without their definitions: the deadline passed before they were parsed.
    pub left_out: Vec<String>,
}

/// Indexes `files` (path, text) in memory, parsing every one.
pub fn in_memory(files: &[(String, String)]) -> Result<InMemory> {
    in_memory_by(files, Deadline::NONE)
}

/// [`in_memory`] within the command's `deadline`: a file it passes before the file is parsed
/// is indexed by its text alone (its chunks without definitions) and named in
/// [`InMemory::left_out`].
pub fn in_memory_by(files: &[(String, String)], deadline: Deadline) -> Result<InMemory> {
    let (schema, fields) = schema();
    let index = with_analyzer(Index::create_in_ram(schema));
    let mut writer = write::writer_for(&index, files.len())?;
    let mut chunk_count = 0;
    let mut left_out = Vec::new();
    for ((path, text), file_id) in files.iter().zip(0..) {
        let definitions = symbols::definitions_by(path, text, deadline).unwrap_or_else(|Late| {
            left_out.push(path.clone());
            Vec::new()
        });
        for doc in chunk_documents(&fields, file_id, path, text, &definitions) {
            writer.add_document(doc)?;
            chunk_count += 1;
        }
    }
    writer
        .commit()
        .context("failed to build the query-time index")?;
    Ok(InMemory {
        index,
        chunk_count,
        left_out,
    })
}
