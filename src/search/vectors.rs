//! Chunk vectors: the semantic half of an index generation, one vector per chunk of every
//! indexed file, computed by a static embedding model ([`crate::search::embed`]) when the
//! index is built with one, and stored next to the tantivy index as `gen-<N>/vectors.bin`.
//!
//! Layout: the magic `EPVEC001`, the vector length as a little-endian `u32`, then fixed-size
//! records: `file_id` (`u64`), first and last line (`u32` each), a scale (`f32`) and the
//! vector quantised to `i8` (unit vectors divided by their largest component, times 127).
//! Quantised vectors are a quarter of the size, and cosine ranking barely notices. Queries
//! scan every record (a few thousand to a few hundred thousand dot products), so there is no
//! vector index to keep in step with incremental builds: a new generation carries the
//! records of unchanged files and appends those of changed ones. Knows nothing of models,
//! paths or tantivy.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;

use crate::search::rank::FileScore;
use crate::state::fs;

const MAGIC: &[u8; 8] = b"EPVEC001";
const HEADER_BYTES: usize = 12;

/// The file of a generation's vectors.
pub const FILE_NAME: &str = "vectors.bin";

/// Vectors being written.
pub struct Writer {
    dim: usize,
    bytes: Vec<u8>,
}

impl Writer {
    /// An empty set of `dim`-long vectors.
    pub fn new(dim: usize) -> Writer {
        let mut bytes = MAGIC.to_vec();
        bytes.extend((dim as u32).to_le_bytes());
        Writer { dim, bytes }
    }

    /// Adds the vector of one chunk (`vector` has unit length or is zero).
    pub fn push(&mut self, file_id: u64, start_line: u32, end_line: u32, vector: &[f32]) {
        let largest = vector.iter().fold(0.0f32, |max, x| max.max(x.abs()));
        let scale = if largest > 0.0 { largest / 127.0 } else { 0.0 };
        self.bytes.extend(file_id.to_le_bytes());
        self.bytes.extend(start_line.to_le_bytes());
        self.bytes.extend(end_line.to_le_bytes());
        self.bytes.extend(scale.to_le_bytes());
        self.bytes.extend(vector.iter().take(self.dim).map(|x| {
            let quantised = if scale > 0.0 {
                (x / scale).round()
            } else {
                0.0
            };
            quantised.clamp(-127.0, 127.0) as i8 as u8
        }));
        for _ in vector.len()..self.dim {
            self.bytes.push(0);
        }
    }

    /// Copies the records of `from` whose file `keep` accepts; returns how many.
    pub fn carry(&mut self, from: &Vectors, keep: &dyn Fn(u64) -> bool) -> u64 {
        if from.dim != self.dim {
            return 0;
        }
        let mut carried = 0;
        for record in from.records() {
            if keep(record.file_id()) {
                self.bytes.extend_from_slice(record.0);
                carried += 1;
            }
        }
        carried
    }

    /// Writes the vectors to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        fs::write_atomic(path, &self.bytes)
    }
}

/// Stored vectors, memory-mapped.
pub struct Vectors {
    map: memmap2::Mmap,
    dim: usize,
}

/// One stored record.
struct Record<'a>(&'a [u8]);

impl Record<'_> {
    fn file_id(&self) -> u64 {
        u64::from_le_bytes(self.0[..8].try_into().unwrap_or([0; 8]))
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.0[at..at + 4].try_into().unwrap_or([0; 4]))
    }

    fn scale(&self) -> f32 {
        f32::from_bits(self.u32_at(16))
    }

    fn values(&self) -> &[u8] {
        &self.0[20..]
    }
}

impl Vectors {
    /// Opens the vectors at `path`.
    pub fn open(path: &Path) -> Result<Vectors> {
        let file = fs::open_no_follow_read(path)?;
        if !file.metadata().is_ok_and(|meta| meta.is_file()) {
            bail!("`{}` is not a regular file", path.display());
        }
        // SAFETY: generations are written once and never modified in place (a new build
        // writes a new generation directory), so the mapped bytes do not change under us.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("failed to map `{}`", path.display()))?;
        if map.len() < HEADER_BYTES || &map[..8] != MAGIC {
            bail!("`{}` is not a vector file", path.display());
        }
        let dim = u32::from_le_bytes([map[8], map[9], map[10], map[11]]) as usize;
        if dim == 0 || !(map.len() - HEADER_BYTES).is_multiple_of(20 + dim) {
            bail!("`{}` is truncated", path.display());
        }
        Ok(Vectors { map, dim })
    }

    /// The vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    fn records(&self) -> impl Iterator<Item = Record<'_>> {
        self.map[HEADER_BYTES..]
            .chunks_exact(20 + self.dim)
            .map(Record)
    }

    /// Every file with a positive weight and a chunk, scored by its best chunk's cosine
    /// similarity to `query` (a unit vector) times its weight, with that chunk's lines.
    pub fn best_chunks(&self, query: &[f32], weight: &dyn Fn(u64) -> f32) -> Vec<FileScore> {
        // The query is quantised like the records, so the inner loop is an integer dot product
        // the compiler vectorises.
        let largest = query.iter().fold(0.0f32, |max, x| max.max(x.abs()));
        let query_scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
        let quantised: Vec<i16> = query
            .iter()
            .map(|x| (x / query_scale).round().clamp(-127.0, 127.0) as i16)
            .collect();
        let mut best: HashMap<u64, FileScore> = HashMap::new();
        let mut weights: HashMap<u64, f32> = HashMap::new();
        for record in self.records() {
            let file_id = record.file_id();
            let file_weight = *weights.entry(file_id).or_insert_with(|| weight(file_id));
            if file_weight <= 0.0 {
                continue;
            }
            let dot: i32 = quantised
                .iter()
                .zip(record.values())
                .map(|(&q, &v)| i32::from(q) * i32::from(v as i8))
                .sum();
            let score = dot as f32 * query_scale * record.scale() * file_weight;
            let chunk = FileScore {
                file_id,
                score,
                start_line: record.u32_at(8),
                end_line: record.u32_at(12),
            };
            best.entry(file_id)
                .and_modify(|found| {
                    if score > found.score {
                        *found = chunk;
                    }
                })
                .or_insert(chunk);
        }
        best.into_values().collect()
    }
}

/// The cosine of two unit vectors, `f32` on both sides (for chunks embedded at query time).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_carries_and_ranks_chunks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = Writer::new(3);
        writer.push(1, 1, 120, &[1.0, 0.0, 0.0]);
        writer.push(1, 91, 210, &[0.6, 0.8, 0.0]);
        writer.push(2, 1, 5, &[0.0, 0.0, 1.0]);
        let first = dir.path().join("a.bin");
        writer.save(&first).expect("save");
        let vectors = Vectors::open(&first).expect("open");
        assert_eq!((vectors.records().count(), vectors.dim()), (3, 3));
        let mut found = vectors.best_chunks(&[0.0, 1.0, 0.0], &|_| 1.0);
        found.sort_by_key(|file| file.file_id);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].start_line, found[0].end_line), (91, 210));
        assert!((found[0].score - 0.8).abs() < 0.01, "{}", found[0].score);
        assert!(found[1].score.abs() < 0.01);
        let mut next = Writer::new(3);
        next.carry(&vectors, &|file_id| file_id == 2);
        next.push(3, 1, 2, &[0.0, 1.0, 0.0]);
        let second = dir.path().join("b.bin");
        next.save(&second).expect("save");
        let carried = Vectors::open(&second).expect("open");
        assert_eq!(carried.records().count(), 2);
        let found = carried.best_chunks(&[0.0, 1.0, 0.0], &|file_id| f32::from(file_id != 2));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].file_id, 3);
    }
}
