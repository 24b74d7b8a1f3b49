//! Static embeddings in the model2vec format: a `model.safetensors` whose `embeddings`
//! matrix has one row per token of the `tokenizer.json` next to it (plus, optionally, a
//! `weights` vector of per-token weights and a `mapping` from token ids to rows). A text's
//! vector is the mean of its tokens' rows, normalised to unit length; no neural network runs,
//! so a whole tree embeds on a CPU in about the time it takes to tokenize it.
//!
//! The tokenizer is WordPiece (what BERT-derived models, and model2vec models distilled from
//! them, ship), implemented here: the text is first cut into identifier parts the way the
//! code tokenizer cuts it (`validatePatch` → `validate`, `patch`), so code reads as words,
//! then each part is lowercased (when the tokenizer's normaliser lowercases) and split into
//! the longest vocabulary pieces, greedily, continuation pieces carrying the `##` prefix. A
//! part with no spelling in the vocabulary counts as unknown and is left out, as model2vec
//! leaves the unknown token out.
//!
//! The matrix is memory-mapped: embedding a short query touches a few rows only. A model is
//! named by a fingerprint of its tokenizer, its tensor header and its size, so an index can
//! tell whether its vectors came from the model it is asked to use. Reads only the model's
//! files; never writes.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use safetensors::Dtype;
use sha2::Digest;
use sha2::Sha256;

use crate::search::VECTOR_CHUNK_SHAPE;
use crate::search::chunk;
use crate::search::tokenize;

/// The model's files inside its directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The tokenizer file inside a model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// A loaded static embedding model.
pub struct Model {
    /// The model directory, as given.
    pub dir: PathBuf,
    /// Names the model's content ([`Model::load`]).
    pub fingerprint: String,
    vocab: HashMap<String, u32>,
    prefix: String,
    lowercase: bool,
    max_chars: usize,
    unknown: Option<u32>,
    table: Table,
}

/// The memory-mapped embedding matrix.
/// The most of a tokenizer file that is read (the largest WordPiece vocabularies take a few
/// megabytes).
const TOKENIZER_LIMIT: u64 = 128 * 1024 * 1024;

/// Opens `path` as a regular file. Model directories may be made of links (the Hugging Face
/// cache links each file to a blob), so links are followed, but what opens must be a file:
/// a link to `/dev/zero` is refused, not read without end.
fn open_regular(path: &Path) -> Result<std::fs::File> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("failed to open `{}`", path.display()))?;
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        bail!("`{}` is not a regular file", path.display());
    }
    Ok(file)
}

/// Reads the regular file at `path`, refusing it when it is larger than `limit` bytes.
fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!("`{}` is larger than {limit} bytes", path.display());
    }
    Ok(bytes)
}

struct Table {
    map: memmap2::Mmap,
    /// Byte offset of row 0 in `map`.
    start: usize,
    rows: usize,
    dim: usize,
    dtype: Dtype,
    weights: Option<Vec<f32>>,
    mapping: Option<Vec<usize>>,
}

impl Model {
    /// Loads the model in directory `dir` (or, given a file, the directory holding it).
    pub fn load(dir: &Path) -> Result<Model> {
        let dir = if dir.is_file() {
            dir.parent().unwrap_or(dir).to_path_buf()
        } else {
            dir.to_path_buf()
        };
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let tokenizer_bytes = read_regular(&tokenizer_path, TOKENIZER_LIMIT)?;
        let tokenizer: TokenizerFile = serde_json::from_slice(&tokenizer_bytes)
            .with_context(|| format!("`{}` is not a tokenizer file", tokenizer_path.display()))?;
        let weights_path = dir.join(WEIGHTS_FILE);
        let file = open_regular(&weights_path)?;
        // SAFETY: the map is read-only and lives as long as the model; a model file changed
        // underneath a running query at worst yields odd vectors for that query.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("failed to map `{}`", weights_path.display()))?;
        let mut hasher = Sha256::new();
        hasher.update(&tokenizer_bytes);
        let table = Table::new(map, &mut hasher)
            .with_context(|| format!("`{}` is not a model2vec model", weights_path.display()))?;
        let fingerprint = hex::encode(&hasher.finalize()[..16]);
        let model = tokenizer.model;
        if model
            .kind
            .as_deref()
            .is_some_and(|kind| kind != "WordPiece")
        {
            bail!(
                "`{}` uses a {} tokenizer; only WordPiece tokenizers are supported",
                tokenizer_path.display(),
                model.kind.unwrap_or_default()
            );
        }
        let unknown = model
            .unk_token
            .as_ref()
            .and_then(|token| model.vocab.get(token).copied());
        let lowercase = tokenizer.normalizer.as_ref().is_none_or(lowercases);
        Ok(Model {
            dir,
            fingerprint,
            vocab: model.vocab,
            prefix: model
                .continuing_subword_prefix
                .unwrap_or_else(|| "##".to_owned()),
            lowercase,
            max_chars: model.max_input_chars_per_word.unwrap_or(100),
            unknown,
            table,
        })
    }

    /// The vector length.
    pub fn dim(&self) -> usize {
        self.table.dim
    }

    /// Appends the token ids of `text` to `out` (unknown pieces left out).
    pub fn token_ids(&self, text: &str, cache: &mut TokenCache, out: &mut Vec<u32>) {
        tokenize::for_each_part(text, |part| {
            if let Some(ids) = cache.get(part) {
                out.extend_from_slice(ids);
                return;
            }
            let mut ids = Vec::new();
            self.word_piece(part, &mut ids);
            out.extend_from_slice(&ids);
            if cache.len() < TOKEN_CACHE_WORDS {
                cache.insert(part.to_owned(), ids);
            }
        });
    }

    /// The WordPiece ids of one word: greedy longest pieces; none when any piece is missing.
    fn word_piece(&self, word: &str, out: &mut Vec<u32>) {
        let word = if self.lowercase {
            word.to_lowercase()
        } else {
            word.to_owned()
        };
        if word.chars().count() > self.max_chars {
            return;
        }
        let mark = out.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                if word.is_char_boundary(end) {
                    piece.clear();
                    if start > 0 {
                        piece.push_str(&self.prefix);
                    }
                    piece.push_str(&word[start..end]);
                    if let Some(&id) = self.vocab.get(&piece) {
                        found = Some(id);
                        break;
                    }
                }
                end -= 1;
            }
            match found {
                Some(id) if Some(id) != self.unknown => {
                    out.push(id);
                    start = end;
                }
                _ => {
                    out.truncate(mark);
                    return;
                }
            }
        }
    }

    /// The unit-length mean of the rows of `ids` (weighted by the model's token weights when
    /// it has them); all zeros when no id has a row.
    pub fn embed_ids(&self, ids: &[u32]) -> Vec<f32> {
        let mut sum = vec![0.0f32; self.table.dim];
        let mut counts: HashMap<u32, u32> = HashMap::with_capacity(ids.len() / 2);
        for &id in ids {
            *counts.entry(id).or_default() += 1;
        }
        for (id, count) in counts {
            self.table.add_row(id, count as f32, &mut sum);
        }
        normalize(&mut sum);
        sum
    }

    /// The vector of every chunk of a file ([`VECTOR_CHUNK_SHAPE`]), each read together with
    /// the file's path (whose words count in every chunk, as they do for the lexical index).
    pub fn chunk_vectors(
        &self,
        path: &str,
        text: &str,
        cache: &mut TokenCache,
    ) -> Vec<ChunkVector> {
        let mut ids = Vec::new();
        chunk::chunks(text, VECTOR_CHUNK_SHAPE)
            .into_iter()
            .map(|chunk| {
                ids.clear();
                self.token_ids(path, cache, &mut ids);
                self.token_ids(chunk.text, cache, &mut ids);
                ChunkVector {
                    start_line: chunk.start_line,
                    end_line: chunk.end_line,
                    vector: self.embed_ids(&ids),
                }
            })
            .collect()
    }

    /// The vector of `text`.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut ids = Vec::new();
        self.token_ids(text, &mut TokenCache::new(), &mut ids);
        self.embed_ids(&ids)
    }
}

/// The vector of one chunk of a file.
pub struct ChunkVector {
    /// First line of the chunk (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// Unit length, or all zeros when no word of the chunk is in the vocabulary.
    pub vector: Vec<f32>,
}

/// Words already split into ids: code repeats its words, and a lookup is cheaper than
/// WordPiece.
pub type TokenCache = HashMap<String, Vec<u32>>;

/// Words a [`TokenCache`] remembers at most.
const TOKEN_CACHE_WORDS: usize = 200_000;

/// Scales `vector` to unit length (leaves a zero vector alone).
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}

impl Table {
    /// The embedding table of a mapped safetensors file; feeds the file's header and size to
    /// `hasher`.
    fn new(map: memmap2::Mmap, hasher: &mut Sha256) -> Result<Table> {
        let (header_len, metadata) = safetensors::SafeTensors::read_metadata(&map)
            .map_err(|err| anyhow::anyhow!("{err}"))?;
        let base = 8 + header_len;
        hasher.update(&map[..base]);
        hasher.update((map.len() as u64).to_le_bytes());
        let Some(info) = metadata.info("embeddings") else {
            bail!("it has no `embeddings` tensor");
        };
        let [rows, dim] = info.shape[..] else {
            bail!("its `embeddings` tensor is not a matrix");
        };
        if !matches!(
            info.dtype,
            Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64
        ) {
            bail!(
                "its `embeddings` are {:?}; F32, F16, BF16 and F64 are supported",
                info.dtype
            );
        }
        let vector = |name: &str| -> Option<Vec<f64>> {
            let info = metadata.info(name)?;
            let bytes = map.get(base + info.data_offsets.0..base + info.data_offsets.1)?;
            Some(
                (0..info.shape.iter().product::<usize>())
                    .map(|index| read_number(bytes, info.dtype, index))
                    .collect(),
            )
        };
        let weights =
            vector("weights").map(|values| values.into_iter().map(|x| x as f32).collect());
        let mapping =
            vector("mapping").map(|values| values.into_iter().map(|x| x as usize).collect());
        Ok(Table {
            start: base + info.data_offsets.0,
            rows,
            dim,
            dtype: info.dtype,
            weights,
            mapping,
            map,
        })
    }

    /// Adds `scale` times the row of token `id` (times its weight) to `sum`.
    fn add_row(&self, id: u32, scale: f32, sum: &mut [f32]) {
        let id = id as usize;
        let row = match &self.mapping {
            Some(mapping) => match mapping.get(id) {
                Some(&row) => row,
                None => return,
            },
            None => id,
        };
        if row >= self.rows {
            return;
        }
        let weight = self
            .weights
            .as_ref()
            .and_then(|weights| weights.get(id).copied())
            .unwrap_or(1.0);
        let scale = scale * weight;
        let width = self.dtype.bitsize() / 8;
        let from = self.start + row * self.dim * width;
        let Some(bytes) = self.map.get(from..from + self.dim * width) else {
            return;
        };
        // The common types get a loop of their own (model2vec saves F16 by default).
        match self.dtype {
            Dtype::F32 => {
                for (x, raw) in sum.iter_mut().zip(bytes.chunks_exact(4)) {
                    *x += scale * f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
                }
            }
            Dtype::F16 => {
                for (x, raw) in sum.iter_mut().zip(bytes.chunks_exact(2)) {
                    *x += scale * f16_to_f32(u16::from_le_bytes([raw[0], raw[1]]));
                }
            }
            _ => {
                for (index, x) in sum.iter_mut().enumerate() {
                    *x += scale * read_number(bytes, self.dtype, index) as f32;
                }
            }
        }
    }
}

/// Element `index` of little-endian `bytes` of type `dtype` (0 for types it does not read).
fn read_number(bytes: &[u8], dtype: Dtype, index: usize) -> f64 {
    let width = dtype.bitsize() / 8;
    let Some(raw) = bytes.get(index * width..(index + 1) * width) else {
        return 0.0;
    };
    match dtype {
        Dtype::F32 => f64::from(f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
        Dtype::F64 => f64::from_le_bytes(raw.try_into().unwrap_or([0; 8])),
        Dtype::F16 => f64::from(f16_to_f32(u16::from_le_bytes([raw[0], raw[1]]))),
        Dtype::BF16 => f64::from(f32::from_bits(
            u32::from(u16::from_le_bytes([raw[0], raw[1]])) << 16,
        )),
        Dtype::I64 => i64::from_le_bytes(raw.try_into().unwrap_or([0; 8])) as f64,
        Dtype::I32 => f64::from(i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
        Dtype::U8 => f64::from(raw[0]),
        _ => 0.0,
    }
}

/// IEEE half precision to single.
fn f16_to_f32(half: u16) -> f32 {
    let sign = u32::from(half >> 15) << 31;
    let exponent = u32::from((half >> 10) & 0x1f);
    let mantissa = u32::from(half & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = mantissa * 2^-24.
            let value = mantissa as f32 * f32::powi(2.0, -24);
            return if sign != 0 { -value } else { value };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000,
        _ => sign | ((exponent + 112) << 23) | (mantissa << 13),
    };
    f32::from_bits(bits)
}

fn lowercases(normalizer: &serde_json::Value) -> bool {
    match normalizer.get("type").and_then(serde_json::Value::as_str) {
        Some("BertNormalizer") => normalizer
            .get("lowercase")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true),
        Some("Lowercase") => true,
        Some("Sequence") => normalizer
            .get("normalizers")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|all| all.iter().any(lowercases)),
        _ => false,
    }
}

/// The parts of `tokenizer.json` this reads.
#[derive(serde::Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    normalizer: Option<serde_json::Value>,
    model: TokenizerModel,
}

#[derive(serde::Deserialize)]
struct TokenizerModel {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    vocab: HashMap<String, u32>,
    #[serde(default)]
    unk_token: Option<String>,
    #[serde(default)]
    continuing_subword_prefix: Option<String>,
    #[serde(default)]
    max_input_chars_per_word: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a model2vec model with `vocabulary` (WordPiece, lowercasing) and one row of
    /// `embeddings` per word into `dir`: what the tests build their tiny models with.
    fn write_model(dir: &Path, vocabulary: &[&str], embeddings: &[Vec<f32>]) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        let dim = embeddings.first().map_or(0, Vec::len);
        let vocab: serde_json::Map<String, serde_json::Value> = vocabulary
            .iter()
            .zip(0u32..)
            .map(|(word, id)| ((*word).to_owned(), id.into()))
            .collect();
        let tokenizer = serde_json::json!({
            "version": "1.0",
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": vocab}
        });
        std::fs::write(dir.join(TOKENIZER_FILE), serde_json::to_vec(&tokenizer)?)?;
        let data: Vec<u8> = embeddings
            .iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let header = serde_json::json!({
            "embeddings": {"dtype": "F32", "shape": [embeddings.len(), dim], "data_offsets": [0, data.len()]}
        });
        let mut header = serde_json::to_vec(&header)?;
        while header.len() % 8 != 0 {
            header.push(b' ');
        }
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header);
        bytes.extend(data);
        std::fs::write(dir.join(WEIGHTS_FILE), bytes)?;
        Ok(())
    }

    #[test]
    fn embeds_by_word_pieces_of_identifier_parts() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_model(
            dir.path(),
            &["[UNK]", "car", "automobile", "fast", "##er", "wheel"],
            &[
                vec![0.0, 0.0, 1.0],
                vec![1.0, 0.0, 0.0],
                vec![1.0, 0.0, 0.0],
                vec![0.0, 1.0, 0.0],
                vec![0.0, 1.0, 0.0],
                vec![1.0, 0.0, 0.0],
            ],
        )
        .expect("model");
        let model = Model::load(dir.path()).expect("load");
        assert_eq!(model.dim(), 3);
        let mut ids = Vec::new();
        model.token_ids("fasterCar zzz_wheel", &mut TokenCache::new(), &mut ids);
        assert_eq!(ids, [3, 4, 1, 5]);
        assert_eq!(model.embed("automobile"), model.embed("CAR"));
        let mixed = model.embed("car faster");
        assert!((mixed[0] - mixed[1] * 0.5).abs() < 1e-6, "{mixed:?}");
        assert_eq!(model.embed("qqq"), [0.0, 0.0, 0.0]);
        let again = Model::load(dir.path()).expect("load");
        assert_eq!(model.fingerprint, again.fingerprint);
    }

    #[test]
    fn half_precision_converts() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3800), 0.5);
    }
}
