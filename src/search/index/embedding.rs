//! Chunk vectors for a new generation: which embedding model a build uses
//! ([`SemanticSetting`], the model the previous generation recorded when it still loads), the
//! vectors it computes for the files it indexes, and those it carries over from the previous
//! generation for files it does not (copied when the model and vector chunk shape are the
//! same, embedded again otherwise).
//!
//! It writes only the new generation's vectors file, when the build asks
//! (`Embedding::save`).

use std::collections::HashSet;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;

use super::Layout;
use crate::search::VECTOR_CHUNK_SHAPE;
use crate::search::embed::Model;
use crate::search::embed::TokenCache;
use crate::search::manifest::FileEntry;
use crate::search::manifest::SemanticIndex;
use crate::search::vectors;
use crate::state::walk;
use crate::state::walk::FileStat;

/// Which embedding model a build computes chunk vectors with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SemanticSetting {
    /// The model of the previous generation, if it had one and it still loads.
    Keep,
    /// The model in this directory.
    Model(PathBuf),
    /// None: the new generation has no vectors.
    Off,
}

/// The model a build uses (`recorded` is the one the previous index used, if any), and why
/// the previous one was dropped when it was.
pub(super) fn resolve_model(
    setting: &SemanticSetting,
    recorded: Option<&SemanticIndex>,
) -> Result<(Option<Model>, Option<String>)> {
    match setting {
        SemanticSetting::Off => Ok((None, None)),
        SemanticSetting::Model(dir) => {
            let model = Model::load(dir).with_context(|| {
                format!("failed to load the embedding model `{}`", dir.display())
            })?;
            Ok((Some(model), None))
        }
        SemanticSetting::Keep => {
            let Some(semantic) = recorded else {
                return Ok((None, None));
            };
            // Builds record the model by its absolute path; a relative one came from elsewhere
            // (a committed cache) and would name something inside the repository.
            let recorded_model = Path::new(&semantic.model);
            let loaded = if recorded_model.is_absolute() {
                Model::load(recorded_model)
            } else {
                Err(anyhow::anyhow!("it is not an absolute path"))
            };
            match loaded {
                Ok(model) => Ok((Some(model), None)),
                Err(err) => Ok((
                    None,
                    Some(format!(
                        "the embedding model `{}` no longer loads ({err:#}); the index has no chunk vectors now (`epiphany index --model DIR` embeds again)",
                        semantic.model
                    )),
                )),
            }
        }
    }
}

/// Chunk vectors being computed for a new generation.
pub(super) struct Embedding<'m> {
    model: &'m Model,
    cache: TokenCache,
    writer: vectors::Writer,
    /// Vectors in the new generation.
    count: u64,
    /// Of those, vectors computed by this build (the rest were carried over).
    pub(super) embedded: u64,
}

impl<'m> Embedding<'m> {
    pub(super) fn new(model: &'m Model) -> Embedding<'m> {
        Embedding {
            model,
            cache: TokenCache::new(),
            writer: vectors::Writer::new(model.dim()),
            count: 0,
            embedded: 0,
        }
    }

    /// Embeds the chunks of one file.
    pub(super) fn add_file(&mut self, file_id: u64, path: &str, text: &str) {
        for chunk in self.model.chunk_vectors(path, text, &mut self.cache) {
            self.writer
                .push(file_id, chunk.start_line, chunk.end_line, &chunk.vector);
            self.count += 1;
            self.embedded += 1;
        }
    }

    /// Saves the vectors in generation `generation`; returns what its manifest records of them.
    pub(super) fn save(&self, layout: &Layout, generation: u64) -> Result<SemanticIndex> {
        self.writer.save(&layout.vectors_path(generation))?;
        Ok(SemanticIndex {
            model: self.model.dir.display().to_string(),
            fingerprint: vectors_fingerprint(self.model),
            dim: u32::try_from(self.model.dim()).unwrap_or(u32::MAX),
            vector_count: self.count,
        })
    }
}

/// Names what a generation's vectors depend on: the model and the vector chunk shape.
pub fn vectors_fingerprint(model: &Model) -> String {
    format!(
        "{}:{}x{}",
        model.fingerprint, VECTOR_CHUNK_SHAPE.lines, VECTOR_CHUNK_SHAPE.overlap
    )
}

/// Gives the files an incremental build carries their vectors: those of generation `from`
/// when it was embedded by the same model, freshly computed otherwise.
pub(super) fn carry_vectors(
    root: &Path,
    layout: &Layout,
    from: u64,
    same_model: bool,
    carried: &[FileEntry],
    embedding: &mut Embedding<'_>,
) -> Result<()> {
    let kept: HashSet<u64> = carried
        .iter()
        .filter(|entry| entry.chunk_count > 0)
        .map(|entry| entry.file_id)
        .collect();
    if same_model && let Ok(old) = vectors::Vectors::open(&layout.vectors_path(from)) {
        embedding.count += embedding
            .writer
            .carry(&old, &|file_id| kept.contains(&file_id));
        return Ok(());
    }
    for entry in carried.iter().filter(|entry| entry.chunk_count > 0) {
        let stat = FileStat {
            path: entry.path.clone(),
            size_bytes: entry.size_bytes,
            modified_unix_nanos: entry.modified_unix_nanos,
        };
        if let Ok(text) = walk::read_text(root, &stat) {
            embedding.add_file(entry.file_id, &entry.path, &text);
        }
    }
    Ok(())
}
