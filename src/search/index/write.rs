//! Writing documents into a generation's index: the writer sized for the work, the plan's
//! deletions, each job's file read, outlined (or its outline reused) and cut into chunk
//! documents on every core, and the commit that stamps the index with its generation.
//!
//! It neither decides what to index (the plan does) nor publishes anything (the build does).

use std::path::Path;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use tantivy::Index;
use tantivy::IndexWriter;
use tantivy::TantivyDocument;
use tantivy::Term;

use super::CANCELLED;
use super::Fields;
use super::Progress;
use super::chunk_documents;
use super::embedding::Embedding;
use super::plan::BuildMode;
use super::plan::Job;
use super::plan::Plan;
use super::plan::count;
use super::schema;
use crate::search::manifest;
use crate::search::manifest::FileEntry;
use crate::search::outlines::FileOutline;
use crate::search::outlines::Outlines;
use crate::search::symbols;
use crate::search::syntax;

/// Indexing memory per writer thread for full builds.
const FULL_BUILD_BYTES_PER_THREAD: usize = 64_000_000;
/// Indexing memory for small updates (tantivy's minimum).
const SMALL_BUILD_BYTES: usize = 15_000_000;

/// A writer sized for `jobs` files: worker threads pay off only for larger batches.
pub(super) fn writer_for(index: &Index, jobs: usize) -> Result<IndexWriter> {
    let threads = if jobs > 64 {
        crate::parallel::cores().min(4)
    } else {
        1
    };
    let budget = if threads > 1 {
        FULL_BUILD_BYTES_PER_THREAD * threads
    } else {
        SMALL_BUILD_BYTES
    };
    index
        .writer_with_num_threads(threads, budget)
        .context("failed to open the index for writing")
}

/// Files prepared at a time: enough to keep every thread busy, few enough to bound memory.
const BATCH_FILES: usize = 256;
/// The most file bytes prepared at a time (one larger file is a batch of its own): a batch's
/// documents hold their files' text until the writer takes them, and 256 files of 1 MB each
/// held 256 MB beside the parses and the writer.
const BATCH_BYTES: u64 = 16 << 20;

/// `items` cut, in order, into runs of at most `max_items` whose `size`s add up to at most
/// `max_bytes`; an item larger than that is a run of its own.
fn batches<T>(
    items: &[T],
    size: impl Fn(&T) -> u64,
    max_items: usize,
    max_bytes: u64,
) -> Vec<&[T]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (at, item) in items.iter().enumerate() {
        let item_bytes = size(item);
        let full = at - start == max_items || bytes.saturating_add(item_bytes) > max_bytes;
        if at > start && full {
            runs.push(&items[start..at]);
            (start, bytes) = (at, 0);
        }
        bytes = bytes.saturating_add(item_bytes);
    }
    if start < items.len() {
        runs.push(&items[start..]);
    }
    runs
}

/// One job's file, read, outlined and cut into documents.
struct Prepared {
    entry: FileEntry,
    docs: Vec<TantivyDocument>,
    outline: Option<FileOutline>,
    /// The text, kept only for embedding.
    text: Option<String>,
}

/// Deletes what the plan replaces and indexes every job; returns the new manifest entries and
/// the jobs' outlines. Files are read, parsed and cut into documents on every core, a batch
/// at a time, the largest first so that no core waits long for the last of a batch; the
/// documents go to the writer in job order. Once the caller gives up, no file is started and
/// the build fails with [`CANCELLED`], before anything is committed.
pub(super) fn write_jobs(
    root: &Path,
    writer: &IndexWriter,
    plan: &Plan<'_>,
    previous_outlines: &Outlines,
    mut embedding: Option<&mut Embedding<'_>>,
    progress: Progress<'_>,
) -> Result<(Vec<FileEntry>, Vec<FileOutline>)> {
    let (_, fields) = schema();
    if plan.mode == BuildMode::Full {
        writer.delete_all_documents()?;
    }
    for &file_id in &plan.deleted {
        writer.delete_term(Term::from_field_u64(fields.file_id, file_id));
    }
    let total = plan.jobs.len() as u64;
    let keep_text = embedding.is_some();
    let mut entries = Vec::with_capacity(plan.jobs.len());
    let mut outlines = Vec::new();
    let cancelled = progress.cancelled;
    let size = |job: &Job<'_>| job.stat.size_bytes;
    for batch in batches(&plan.jobs, size, BATCH_FILES, BATCH_BYTES) {
        let prepared = crate::parallel::map_balanced(batch, size, |job| {
            (!cancelled()).then(|| prepare(root, &fields, job, previous_outlines, keep_text))
        });
        // A file skipped for the cancel leaves the batch incomplete: nothing of it is kept.
        let Some(prepared) = prepared.into_iter().collect::<Option<Vec<_>>>() else {
            bail!(CANCELLED);
        };
        for prepared in prepared {
            for doc in prepared.docs {
                writer.add_document(doc)?;
            }
            if let (Some(embedding), Some(text)) = (embedding.as_deref_mut(), &prepared.text) {
                embedding.add_file(prepared.entry.file_id, &prepared.entry.path, text);
            }
            outlines.extend(prepared.outline);
            entries.push(prepared.entry);
            (progress.report)(entries.len() as u64, total);
        }
    }
    Ok((entries, outlines))
}

/// Reads one job's file (unless the comparison already did), takes its outline from the
/// previous generation when its contents are the same or parses it, and cuts it into chunk
/// documents.
fn prepare(
    root: &Path,
    fields: &Fields,
    job: &Job<'_>,
    previous_outlines: &Outlines,
    keep_text: bool,
) -> Prepared {
    let fetched_now;
    let fetched = match &job.fetched {
        Some(fetched) => fetched,
        None => {
            fetched_now = manifest::fetch(root, job.stat);
            &fetched_now
        }
    };
    let path = &job.stat.path;
    let mut prepared = Prepared {
        entry: FileEntry {
            path: path.clone(),
            size_bytes: job.stat.size_bytes,
            modified_unix_nanos: job.stat.modified_unix_nanos,
            content_hash: fetched.content_hash.clone(),
            file_id: job.file_id,
            chunk_count: 0,
            skipped: None,
        },
        docs: Vec::new(),
        outline: None,
        text: None,
    };
    let text = match &fetched.text {
        Ok(text) => text,
        Err(skip) => {
            prepared.entry.skipped = Some(*skip);
            return prepared;
        }
    };
    let outline = match previous_outlines.find(path, &fetched.content_hash) {
        Some(found) => Some(found.outline.clone()),
        None => syntax::outline(path, text),
    };
    let definitions = match &outline {
        Some(outline) => symbols::outlined(outline),
        None => symbols::definitions(path, text),
    };
    prepared.docs = chunk_documents(fields, job.file_id, path, text, &definitions).collect();
    prepared.entry.chunk_count = count(prepared.docs.len());
    prepared.outline = outline.map(|outline| FileOutline {
        path: path.clone(),
        content_hash: fetched.content_hash.clone(),
        outline,
    });
    if keep_text {
        prepared.text = Some(text.clone());
    }
    prepared
}

/// Commits what `writer` wrote, stamped with `generation` so that an opener can tell the index
/// and its manifest belong together.
pub(super) fn commit(mut writer: IndexWriter, generation: u64) -> Result<()> {
    let mut prepared = writer
        .prepare_commit()
        .context("failed to commit the index")?;
    prepared.set_payload(&generation.to_string());
    prepared.commit().context("failed to commit the index")?;
    writer
        .wait_merging_threads()
        .context("failed to finish merging index segments")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(runs: &[&[u64]]) -> Vec<usize> {
        runs.iter().map(|run| run.len()).collect()
    }

    #[test]
    fn batches_are_cut_by_count_and_by_bytes_and_keep_every_item_in_order() {
        let sizes: Vec<u64> = vec![1; 10];
        assert_eq!(lengths(&batches(&sizes, |s| *s, 4, 100)), [4, 4, 2]);
        let sizes = [3, 3, 3, 10, 1, 1];
        let runs = batches(&sizes, |s| *s, 256, 6);
        // A file larger than the bound is a batch of its own.
        assert_eq!(runs, [&[3, 3][..], &[3], &[10], &[1, 1]]);
        assert_eq!(runs.concat(), sizes);
        assert!(batches(&[] as &[u64], |s| *s, 4, 4).is_empty());
    }
}
