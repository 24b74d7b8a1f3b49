//! Semantic ranking at query time: the query's vector against the chunk vectors an index
//! generation stores ([`vectors`]), with the model that generation was built with
//! ([`embed`]; `index --model` records it in the manifest, so `retrieve` needs no flag). Files
//! changed since the index are embedded now, from their current text, so a changed file is
//! never ranked by its old vectors. A file's score is its best chunk's cosine similarity to
//! the query, times its prior. Read-only.
//!
//! [`embed`]: crate::search::embed

use std::path::Path;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;

use crate::search::embed::Model;
use crate::search::embed::TokenCache;
use crate::search::index;
use crate::search::index::Layout;
use crate::search::manifest::Manifest;
use crate::search::rank::FileScore;
use crate::search::vectors;
use crate::search::vectors::Vectors;

/// The model and chunk vectors of an index generation.
pub struct Semantic {
    model: Model,
    vectors: Vectors,
}

impl Semantic {
    /// The model and vectors of the generation `manifest` describes; `None` when it was built
    /// without a model.
    pub fn open(layout: &Layout, manifest: &Manifest) -> Result<Option<Semantic>> {
        let Some(recorded) = &manifest.semantic else {
            return Ok(None);
        };
        let model = Model::load(Path::new(&recorded.model)).with_context(|| {
            format!(
                "the embedding model `{}` the index was built with does not load",
                recorded.model
            )
        })?;
        if index::vectors_fingerprint(&model) != recorded.fingerprint {
            bail!(
                "the embedding model `{}` changed since the index was built; run `epiphany index` to embed again",
                recorded.model
            );
        }
        let vectors = Vectors::open(&layout.vectors_path(manifest.generation))?;
        if vectors.dim() != model.dim() {
            bail!(
                "the index's vectors do not fit the embedding model `{}`; run `epiphany index --full`",
                recorded.model
            );
        }
        Ok(Some(Semantic { model, vectors }))
    }

    /// The query's vector.
    pub fn query(&self, text: &str) -> Vec<f32> {
        self.model.embed(text)
    }

    /// Every indexed file with a positive `weight`, scored by its best chunk.
    pub fn indexed(&self, query: &[f32], weight: &dyn Fn(u64) -> f32) -> Vec<FileScore> {
        self.vectors.best_chunks(query, weight)
    }

    /// A file read now, scored by its best chunk (`file_id` is `id`); `None` when it has no
    /// chunk.
    pub fn fresh(
        &self,
        query: &[f32],
        id: u64,
        path: &str,
        text: &str,
        cache: &mut TokenCache,
    ) -> Option<FileScore> {
        self.model
            .chunk_vectors(path, text, cache)
            .into_iter()
            .map(|chunk| FileScore {
                file_id: id,
                score: vectors::cosine(query, &chunk.vector),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
            })
            .max_by(|a, b| a.score.total_cmp(&b.score))
    }
}
