//! Snapshots: the folded state of a set of records, cached in `snapshots/` so that readers do
//! not replay the whole rollout.
//!
//! A snapshot file is `EPISNAP2` + a little-endian `u32` header length + a MessagePack header +
//! the header's CRC-32 + the body. The header says which records the snapshot folded (how many,
//! their heads, and how far into each rollout segment they reach, which readers check) and
//! where each section of the body lies. Sections are split into blocks with their own CRC-32,
//! so a reader decodes only what it needs (the newest observations, not all of them) and a
//! flipped byte is caught in whatever it reads. A snapshot that fails a check is never served:
//! the store falls back to an older one or to the rollout.
//!
//! The file is named by its record count and the hash of its header, so two branches never
//! write different files under one name and git merges `snapshots/` without conflicts.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::Context;
use anyhow::Result;
use anyhow::bail;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Digest;
use sha2::Sha256;

use crate::state::fold::Folded;
use crate::state::fold::RecordMeta;
use crate::state::fold::Writers;
use crate::state::git::Checkout;
use crate::state::model::EvidenceRecord;
use crate::state::model::GraphKind;
use crate::state::model::Observation;
use crate::state::model::State;

/// The snapshot format this binary writes. Format 1 was a single `state.msgpack`; format 2
/// files (not veiled) and format 3 files (the ids in one `ids` section) are still read.
pub const FORMAT_VERSION: u32 = 4;

const MAGIC: &[u8; 8] = b"EPISNAP3";
const MAGIC_UNVEILED: &[u8; 8] = b"EPISNAP2";
/// Items per block of the list sections.
const BLOCK_ITEMS: usize = 512;
/// The suffix of snapshot file names.
pub const SUFFIX: &str = ".snapshot";

/// When a record (a graph node or the investigation checkpoint) was last written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Anchor {
    /// The revision of that write.
    pub revision: u64,
    /// The commit checked out at that write, when in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_head: Option<String>,
    /// When that write happened (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// The anchor key of the investigation checkpoint.
pub const CHECKPOINT_ANCHOR: &str = "investigation_checkpoint";

/// The anchor key of a graph node.
pub fn node_anchor_key(graph: GraphKind, id: &str) -> String {
    format!("{}/{id}", graph.as_str())
}

/// How far into one rollout segment the folded records reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutMark {
    /// The segment's file name.
    pub segment: String,
    /// Its id.
    pub last_id: String,
    /// Where its line ends (bytes from the start of the segment).
    pub end: u64,
    /// The length of its line, newline included.
    pub line_bytes: u64,
}

/// The header of a snapshot file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Encoding version.
    pub format_version: u32,
    /// Records folded.
    pub records: u64,
    /// Their heads.
    pub tips: Vec<String>,
    /// How far into each rollout segment the folded records reach.
    pub marks: Vec<RolloutMark>,
    /// The commit checked out at the last folded record's write.
    #[serde(default)]
    pub last_git_head: Option<String>,
    /// The body's sections.
    pub sections: Vec<Section>,
    /// Where the work tree stood when the fold was cached, when git was at rest (no merge or
    /// rebase under way): while it stands there, every record the fold holds must stay in the
    /// rollout, or records were lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_at: Option<Checkout>,
}

/// A named part of the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// Items in it (1 for a single value).
    pub items: u64,
    /// Its blocks, in order.
    pub blocks: Vec<Block>,
}

/// A checksummed run of bytes of the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Offset from the start of the body.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Items in it.
    pub items: u64,
    /// CRC-32 of its bytes.
    pub crc: u32,
}

/// What a snapshot holds, ready to encode.
#[derive(Debug)]
pub struct Contents<'a> {
    /// The folded records' result (mutable only so that the core section can be encoded
    /// without copying the lists: they are taken out and put back).
    pub folded: &'a mut Folded,
    /// How many records it folded.
    pub records: u64,
    /// How far into each rollout segment they reach.
    pub marks: &'a [RolloutMark],
    /// The ids of the folded records, in fold order.
    pub order: &'a [String],
    /// What the snapshot keeps of each of them, in the same order, when it is known for all.
    pub metas: Option<&'a [RecordMeta<u32>]>,
    /// Where the work tree stands, when git is at rest.
    pub cached_at: Option<Checkout>,
}

/// The body sections that hold the state.
mod names {
    pub const CORE: &str = "core";
    pub const GRAPHS: &str = "graphs";
    pub const ANCHORS: &str = "anchors";
    pub const WRITERS: &str = "writers";
    pub const OBSERVATIONS: &str = "observations";
    pub const EVIDENCE: &str = "evidence";
    pub const ORDER: &str = "order";
    pub const RECORDS: &str = "records";
    /// Format 3 kept every id in one block.
    pub const IDS: &str = "ids";
    pub const OBSERVATION_IDS: &str = "observation_ids";
    pub const EVIDENCE_IDS: &str = "evidence_ids";
    /// The first id of each block of the two id lists.
    pub const ID_BOUNDS: &str = "id_bounds";
}

/// The ids of the stored observations and evidence records, sorted: what a write checks new
/// ids against without decoding the records. Encoded from the state's own ids (`&str`),
/// decoded owned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredIds<S = String> {
    /// Observation ids, sorted.
    pub observations: Vec<S>,
    /// Evidence ids, sorted.
    pub evidence: Vec<S>,
}

impl<S: AsRef<str>> StoredIds<S> {
    /// Whether any of `observations` is an observation id, or of `evidence` an evidence id.
    pub fn holds_any(&self, observations: &[&str], evidence: &[&str]) -> bool {
        let held =
            |ids: &[S], id: &&str| ids.binary_search_by(|held| held.as_ref().cmp(id)).is_ok();
        (observations.iter()).any(|id| held(&self.observations, id))
            || (evidence.iter()).any(|id| held(&self.evidence, id))
    }
}

impl<'a> StoredIds<&'a str> {
    /// The ids of `state`'s lists, sorted.
    pub fn of(state: &'a State) -> StoredIds<&'a str> {
        let sorted = |mut ids: Vec<&'a str>| {
            ids.sort_unstable();
            ids
        };
        StoredIds {
            observations: sorted(state.observations.iter().map(|o| o.id.as_str()).collect()),
            evidence: sorted(
                state
                    .recent_evidence
                    .iter()
                    .map(|e| e.id.as_str())
                    .collect(),
            ),
        }
    }

    /// The same ids, owned.
    pub fn owned(&self) -> StoredIds {
        let owned = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect();
        StoredIds {
            observations: owned(&self.observations),
            evidence: owned(&self.evidence),
        }
    }
}

/// Encodes a snapshot and returns its file name and bytes.
pub fn encode(contents: Contents<'_>) -> Result<(String, Vec<u8>)> {
    let folded = contents.folded;
    let mut body = Vec::new();
    let mut sections = vec![core_section(&mut body, &mut folded.state)?];
    sections.push(single(&mut body, names::GRAPHS, &folded.state.graphs)?);
    sections.push(single(&mut body, names::ANCHORS, &folded.anchors)?);
    sections.push(match &folded.writers {
        Some(writers) => single(&mut body, names::WRITERS, writers)?,
        None => single(&mut body, names::WRITERS, &Writers::new())?,
    });
    sections.push(list(
        &mut body,
        names::OBSERVATIONS,
        &folded.state.observations,
    )?);
    sections.push(list(
        &mut body,
        names::EVIDENCE,
        &folded.state.recent_evidence,
    )?);
    sections.push(list(&mut body, names::ORDER, contents.order)?);
    if let Some(metas) = contents.metas {
        sections.push(list(&mut body, names::RECORDS, metas)?);
    }
    // The ids lie sorted in blocks, and the first of each block is kept apart, so that a
    // reader asking after a few ids decodes only the blocks they would be in.
    let ids = StoredIds::of(&folded.state);
    let firsts = |ids: &[&'_ str]| -> Vec<String> {
        (ids.chunks(BLOCK_ITEMS).map(|block| block[0].to_owned())).collect()
    };
    let bounds = StoredIds {
        observations: firsts(&ids.observations),
        evidence: firsts(&ids.evidence),
    };
    sections.push(list(&mut body, names::OBSERVATION_IDS, &ids.observations)?);
    sections.push(list(&mut body, names::EVIDENCE_IDS, &ids.evidence)?);
    sections.push(single(&mut body, names::ID_BOUNDS, &bounds)?);
    let header = Header {
        format_version: FORMAT_VERSION,
        records: contents.records,
        tips: folded.tips.iter().cloned().collect(),
        marks: contents.marks.to_vec(),
        last_git_head: folded.last_git_head.clone(),
        sections,
        cached_at: contents.cached_at,
    };
    seal(&header, body)
}

/// The snapshot file of `header` and its `body` (unveiled), and its file name: the record
/// count and a hash of the header.
fn seal(header: &Header, body: Vec<u8>) -> Result<(String, Vec<u8>)> {
    let header_bytes = rmp_serde::to_vec_named(header)?;
    let digest = Sha256::digest(&header_bytes);
    let seed = u64::from_le_bytes(
        digest[..8]
            .try_into()
            .expect("a SHA-256 digest has 32 bytes"),
    );
    let mut prefix = Vec::with_capacity(header_bytes.len() + 24);
    prefix.extend_from_slice(MAGIC);
    prefix.extend_from_slice(&seed.to_le_bytes());
    prefix.extend_from_slice(&(header_bytes.len() as u32).to_le_bytes());
    let veiled_from = prefix.len();
    prefix.extend_from_slice(&header_bytes);
    prefix.extend_from_slice(&crc32fast::hash(&header_bytes).to_le_bytes());
    // The body moves up to make room (in place when its buffer has room to spare) rather
    // than into a second buffer of its size.
    let mut bytes = body;
    bytes.splice(0..0, prefix);
    veil(seed, 0, &mut bytes[veiled_from..]);
    let name = format!(
        "{:012}-{}{SUFFIX}",
        header.records,
        &hex::encode(digest)[..16]
    );
    Ok((name, bytes))
}

/// XORs `bytes`, which sit `position` bytes into the veiled part of a snapshot, with the
/// keystream of `seed` (so it both veils and unveils). Two snapshots of nearly the same state
/// have different seeds (their headers differ), so their bytes share nothing: git's rename
/// detection pairs a removed file with a similar added one, and when both branches thinned the
/// same old snapshot away and stored similar new ones, a merge stopped with
/// `CONFLICT (rename/rename)`.
///
/// Whole words are XORed as words: a header holds a mark per segment file, and a per-byte loop
/// cost a read of thousands of them more than decoding them.
fn veil(seed: u64, position: u64, bytes: &mut [u8]) {
    let key = |word: u64| splitmix64(seed ^ word).to_le_bytes();
    // The bytes up to the first word boundary, then whole words, then what is left.
    let from = (position % 8) as usize;
    let head = ((8 - from) % 8).min(bytes.len());
    let (first, rest) = bytes.split_at_mut(head);
    for (byte, key) in first.iter_mut().zip(&key(position / 8)[from..]) {
        *byte ^= key;
    }
    let mut word = position.div_ceil(8);
    let mut words = rest.chunks_exact_mut(8);
    for chunk in &mut words {
        let veiled =
            u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) ^ u64::from_ne_bytes(key(word));
        chunk.copy_from_slice(&veiled.to_ne_bytes());
        word += 1;
    }
    for (byte, key) in words.into_remainder().iter_mut().zip(&key(word)) {
        *byte ^= key;
    }
}

/// The SplitMix64 output function: a well-mixed 64-bit word for every input.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The core section: the state without the graphs and lists, which have sections of their
/// own. They are taken out for the encoding and put back, so nothing is copied.
fn core_section(body: &mut Vec<u8>, state: &mut State) -> Result<Section> {
    let graphs = std::mem::take(&mut state.graphs);
    let observations = std::mem::take(&mut state.observations);
    let evidence = std::mem::take(&mut state.recent_evidence);
    let section = single(body, names::CORE, state);
    state.graphs = graphs;
    state.observations = observations;
    state.recent_evidence = evidence;
    section
}

fn single(body: &mut Vec<u8>, name: &str, value: &impl Serialize) -> Result<Section> {
    Ok(Section {
        name: name.to_owned(),
        items: 1,
        blocks: vec![push_block(body, value, 1)?],
    })
}

fn list<T: Serialize>(body: &mut Vec<u8>, name: &str, items: &[T]) -> Result<Section> {
    let blocks = (items.chunks(BLOCK_ITEMS))
        .map(|chunk| push_block(body, chunk, chunk.len() as u64))
        .collect::<Result<_>>()?;
    Ok(Section {
        name: name.to_owned(),
        items: items.len() as u64,
        blocks,
    })
}

/// Encodes `value` at the end of `body` as a block of `items` items.
fn push_block<T: Serialize + ?Sized>(body: &mut Vec<u8>, value: &T, items: u64) -> Result<Block> {
    let offset = body.len();
    rmp_serde::encode::write_named(body, value)?;
    Ok(Block {
        offset: offset as u64,
        len: (body.len() - offset) as u64,
        items,
        crc: crc32fast::hash(&body[offset..]),
    })
}

/// The record count a snapshot file name starts with, if it is a snapshot's name.
pub fn records_in_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(SUFFIX)?;
    let (count, hash) = stem.split_once('-')?;
    (count.len() == 12 && hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| count.parse().ok())
        .flatten()
}

/// Which parts of a snapshot a load decodes (and of the head a read builds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// How many of the newest observations and evidence records (`None`: all).
    pub lists: Option<usize>,
    /// The graphs and the anchors. Without them the state's graphs are empty.
    pub graphs: bool,
    /// The live writers of every field and record.
    pub writers: bool,
    /// With `lists`: the ids of every observation and evidence record.
    pub ids: bool,
}

impl Parts {
    /// Everything but the live writers and the ids.
    pub const WHOLE: Parts = Parts {
        lists: None,
        graphs: true,
        writers: false,
        ids: false,
    };
}

/// A map decoded from its MessagePack form (written in key order) by collecting the pairs and
/// building the tree from them at once: inserting tens of thousands of keys one by one, each
/// found by comparing long common prefixes, costs several times more.
struct SortedMap<V>(BTreeMap<String, V>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for SortedMap<V> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Pairs<V> {
            type Value = Vec<(String, V)>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(pair) = map.next_entry()? {
                    pairs.push(pair);
                }
                Ok(pairs)
            }
        }
        let pairs = deserializer.deserialize_map(Pairs(std::marker::PhantomData))?;
        Ok(SortedMap(pairs.into_iter().collect()))
    }
}

/// An open snapshot file: its header is read and checked; sections are read on demand.
#[derive(Debug)]
pub struct SnapshotFile {
    file: File,
    /// Its length when opened: every block must lie inside it.
    len: u64,
    body_start: u64,
    /// The keystream seed and where the veiled part starts (none for format 2).
    veil: Option<(u64, u64)>,
    /// The header.
    pub header: Header,
}

/// What a snapshot holds for a fold to continue from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The fold it holds: its list sections as far as they were asked for, its writers when
    /// asked for, no metas.
    pub folded: Folded,
    /// The ids of all its observations and evidence, when its lists were cut short.
    pub ids: Option<StoredIds>,
}

impl SnapshotFile {
    /// Opens a snapshot and checks its header.
    pub fn open(path: &Path) -> Result<SnapshotFile> {
        let mut file =
            File::open(path).with_context(|| format!("failed to open `{}`", path.display()))?;
        let short = |_| anyhow::anyhow!("the file is shorter than a snapshot header");
        let mut magic = [0u8; 8];
        file.read_exact(&mut magic).map_err(short)?;
        let seed = match &magic {
            MAGIC => {
                let mut seed = [0u8; 8];
                file.read_exact(&mut seed).map_err(short)?;
                Some(u64::from_le_bytes(seed))
            }
            MAGIC_UNVEILED => None,
            _ => bail!("not an epiphany snapshot (format {FORMAT_VERSION})"),
        };
        let mut len = [0u8; 4];
        file.read_exact(&mut len).map_err(short)?;
        let header_len = u32::from_le_bytes(len) as usize;
        if header_len > 64 << 20 {
            bail!("the header claims {header_len} bytes");
        }
        let veiled_from = magic.len() as u64 + if seed.is_some() { 8 } else { 0 } + 4;
        let mut header_bytes = vec![0u8; header_len + 4];
        file.read_exact(&mut header_bytes)
            .map_err(|_| anyhow::anyhow!("the header is cut short"))?;
        if let Some(seed) = seed {
            veil(seed, 0, &mut header_bytes);
        }
        let (header_bytes, crc) = header_bytes.split_at(header_len);
        if crc32fast::hash(header_bytes).to_le_bytes() != crc {
            bail!("the header fails its checksum (the file is damaged)");
        }
        let header: Header = rmp_serde::from_slice(header_bytes)
            .map_err(|err| anyhow::anyhow!("the header does not decode: {err}"))?;
        if header.format_version > FORMAT_VERSION {
            bail!(
                "snapshot format {} is newer than this binary understands (format {FORMAT_VERSION}); upgrade epiphany",
                header.format_version
            );
        }
        let len = file
            .metadata()
            .with_context(|| format!("failed to read `{}`", path.display()))?
            .len();
        Ok(SnapshotFile {
            file,
            len,
            body_start: veiled_from + header_len as u64 + 4,
            veil: seed.map(|seed| (seed, veiled_from)),
            header,
        })
    }

    /// This snapshot with `marks` in place of its header's (the same fold, its records now
    /// found elsewhere: a compaction moved them), and its file name. Every block is checked
    /// as it is copied.
    pub fn with_marks(&self, marks: Vec<RolloutMark>) -> Result<(String, Vec<u8>)> {
        use std::os::unix::fs::FileExt;
        let mut body = vec![0u8; self.len.saturating_sub(self.body_start) as usize];
        self.file
            .read_exact_at(&mut body, self.body_start)
            .map_err(|_| anyhow::anyhow!("the body is cut short (the file is truncated)"))?;
        if let Some((seed, veiled_from)) = self.veil {
            veil(seed, self.body_start - veiled_from, &mut body);
        }
        for block in self.header.sections.iter().flat_map(|s| &s.blocks) {
            let bytes = usize::try_from(block.offset)
                .ok()
                .and_then(|start| body.get(start..start.checked_add(block.len as usize)?));
            if bytes.is_none_or(|bytes| crc32fast::hash(bytes) != block.crc) {
                bail!("a block fails its checksum (the file is damaged)");
            }
        }
        let header = Header {
            marks,
            ..self.header.clone()
        };
        seal(&header, body)
    }

    fn section(&self, name: &str) -> Result<&Section> {
        self.header
            .sections
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| anyhow::anyhow!("the snapshot has no `{name}` section"))
    }

    fn block(&self, block: &Block) -> Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        // The header's checksum proves it whole, not honest: a forged length must not make a
        // read allocate more than the file holds.
        let end = (self.body_start.checked_add(block.offset))
            .and_then(|start| start.checked_add(block.len));
        if end.is_none_or(|end| end > self.len) {
            bail!("a block lies outside the file (the file is damaged)");
        }
        let mut bytes = vec![0u8; block.len as usize];
        self.file
            .read_exact_at(&mut bytes, self.body_start + block.offset)
            .map_err(|_| anyhow::anyhow!("a block is cut short (the file is truncated)"))?;
        if let Some((seed, veiled_from)) = self.veil {
            veil(
                seed,
                self.body_start + block.offset - veiled_from,
                &mut bytes,
            );
        }
        if crc32fast::hash(&bytes) != block.crc {
            bail!("a block fails its checksum (the file is damaged)");
        }
        Ok(bytes)
    }

    fn value<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let section = self.section(name)?;
        let block = section
            .blocks
            .first()
            .ok_or_else(|| anyhow::anyhow!("the `{name}` section is empty"))?;
        rmp_serde::from_slice(&self.block(block)?)
            .map_err(|err| anyhow::anyhow!("the `{name}` section does not decode: {err}"))
    }

    /// The first `limit` items of a list section (all of them when `None`).
    fn items<T: DeserializeOwned>(&self, name: &str, limit: Option<usize>) -> Result<Vec<T>> {
        let section = self.section(name)?;
        let wanted = limit.unwrap_or(usize::MAX);
        // Reserved once (growing a large list faults fresh memory in at every step), never
        // past what the file could hold: every item takes at least a byte.
        let mut items = Vec::with_capacity(wanted.min(section.items.min(self.len) as usize));
        for block in &section.blocks {
            if items.len() >= wanted {
                break;
            }
            let chunk: Vec<T> = rmp_serde::from_slice(&self.block(block)?)
                .map_err(|err| anyhow::anyhow!("the `{name}` section does not decode: {err}"))?;
            items.extend(chunk);
        }
        items.truncate(wanted);
        Ok(items)
    }

    /// The last `count` ids of the fold order, with the position of the first.
    pub fn order_tail(&self, count: usize) -> Result<(u64, Vec<String>)> {
        let section = self.section(names::ORDER)?;
        let mut ids: Vec<String> = Vec::new();
        let mut first = section.items;
        for block in section.blocks.iter().rev() {
            if ids.len() >= count {
                break;
            }
            let mut chunk: Vec<String> = rmp_serde::from_slice(&self.block(block)?)
                .map_err(|err| anyhow::anyhow!("the order section does not decode: {err}"))?;
            first -= chunk.len() as u64;
            chunk.append(&mut ids);
            ids = chunk;
        }
        let skip = ids.len().saturating_sub(count);
        Ok((first + skip as u64, ids.split_off(skip)))
    }

    /// Every id of the fold order.
    pub fn order(&self) -> Result<Vec<String>> {
        self.items(names::ORDER, None)
    }

    /// What the snapshot keeps of each folded record, in fold order; `None` for a snapshot
    /// written without it (by an older binary, or on top of one).
    pub fn metas(&self) -> Result<Option<Vec<RecordMeta<u32>>>> {
        if !self
            .header
            .sections
            .iter()
            .any(|s| s.name == names::RECORDS)
        {
            return Ok(None);
        }
        self.items(names::RECORDS, None).map(Some)
    }

    /// Loads the state, as far as `parts` asks.
    pub fn load(&self, parts: Parts) -> Result<Loaded> {
        let mut state: State = self.value(names::CORE)?;
        if parts.graphs {
            state.graphs = self.value(names::GRAPHS)?;
        }
        state.observations = self.items::<Observation>(names::OBSERVATIONS, parts.lists)?;
        state.recent_evidence = self.items::<EvidenceRecord>(names::EVIDENCE, parts.lists)?;
        let folded = Folded {
            state,
            anchors: match parts.graphs {
                true => self.value::<SortedMap<Anchor>>(names::ANCHORS)?.0,
                false => BTreeMap::new(),
            },
            writers: match parts.writers {
                true => Some(self.value(names::WRITERS)?),
                false => None,
            },
            tips: self.header.tips.iter().cloned().collect(),
            last_git_head: self.header.last_git_head.clone(),
            metas: Vec::new(),
        };
        Ok(Loaded {
            folded,
            ids: match parts.lists {
                Some(_) if parts.ids => Some(self.stored_ids()?),
                _ => None,
            },
        })
    }

    /// Checks every byte: the sections' blocks lie end to end over the whole body, and each
    /// passes its checksum. Readers check only the blocks they decode; `verify` checks them all.
    pub fn check_whole(&self) -> Result<()> {
        let mut blocks: Vec<&Block> = (self.header.sections.iter())
            .flat_map(|section| &section.blocks)
            .collect();
        blocks.sort_by_key(|block| block.offset);
        let mut end = 0;
        for block in blocks {
            if block.offset != end {
                bail!(
                    "bytes {end}..{} of the body belong to no section",
                    block.offset
                );
            }
            self.block(block)?;
            end = block.offset + block.len;
        }
        let body = self.len.saturating_sub(self.body_start);
        if end != body {
            bail!("the body holds {body} bytes but its sections cover {end}");
        }
        Ok(())
    }

    /// The ids of every observation and evidence record.
    pub fn stored_ids(&self) -> Result<StoredIds> {
        if self.has_section(names::IDS) {
            return self.value(names::IDS);
        }
        Ok(StoredIds {
            observations: self.items(names::OBSERVATION_IDS, None)?,
            evidence: self.items(names::EVIDENCE_IDS, None)?,
        })
    }

    /// Whether the snapshot holds any of `observations` among its observation ids or of
    /// `evidence` among its evidence ids, decoding only the blocks of ids they would lie in.
    pub fn holds_any(&self, observations: &[&str], evidence: &[&str]) -> Result<bool> {
        if observations.is_empty() && evidence.is_empty() {
            return Ok(false);
        }
        if self.has_section(names::IDS) {
            return Ok(self.stored_ids()?.holds_any(observations, evidence));
        }
        let bounds: StoredIds = self.value(names::ID_BOUNDS)?;
        for (wanted, name, firsts) in [
            (observations, names::OBSERVATION_IDS, &bounds.observations),
            (evidence, names::EVIDENCE_IDS, &bounds.evidence),
        ] {
            let blocks = &self.section(name)?.blocks;
            if blocks.len() != firsts.len() {
                bail!("the `{name}` section does not match its bounds (the file is damaged)");
            }
            let at: BTreeSet<usize> = (wanted.iter())
                .filter_map(|id| {
                    firsts
                        .partition_point(|first| first.as_str() <= *id)
                        .checked_sub(1)
                })
                .collect();
            for block in at.into_iter().map(|at| &blocks[at]) {
                let bytes = self.block(block)?;
                let ids: Vec<&str> = rmp_serde::from_slice(&bytes).map_err(|err| {
                    anyhow::anyhow!("the `{name}` section does not decode: {err}")
                })?;
                if wanted.iter().any(|id| ids.binary_search(id).is_ok()) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    fn has_section(&self, name: &str) -> bool {
        self.header.sections.iter().any(|s| s.name == name)
    }

    /// How many observations and evidence records the snapshot holds.
    pub fn list_counts(&self) -> Result<(u64, u64)> {
        Ok((
            self.section(names::OBSERVATIONS)?.items,
            self.section(names::EVIDENCE)?.items,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::model::Observation;

    fn folded(observations: usize) -> Folded {
        let state = State {
            revision: 3,
            objective: Some("o".into()),
            observations: (0..observations)
                .map(|i| Observation {
                    id: format!("obs-{i}"),
                    summary: "s".into(),
                    source_kind: "t".into(),
                    status: "ok".into(),
                    code_refs: vec![],
                    evidence_ids: vec!["e".into()],
                    supersedes: None,
                })
                .collect(),
            ..State::default()
        };
        Folded {
            state,
            anchors: BTreeMap::from([(
                CHECKPOINT_ANCHOR.to_owned(),
                Anchor {
                    revision: 2,
                    git_head: None,
                    at: None,
                },
            )]),
            writers: None,
            tips: BTreeSet::from(["t".to_owned()]),
            last_git_head: None,
            metas: Vec::new(),
        }
    }

    /// What the snapshots of these tests keep of their three records.
    fn metas() -> Vec<RecordMeta<u32>> {
        (0..3u32)
            .map(|at| RecordMeta {
                at: format!("2026-01-01T00:00:0{at}Z"),
                parents: at.checked_sub(1).into_iter().collect(),
                appended: (at > 0).then(|| vec![0, 0, 1, 0]),
            })
            .collect()
    }

    fn write(dir: &Path, folded: &Folded) -> std::path::PathBuf {
        let order: Vec<String> = (0..3).map(|i| format!("r{i}")).collect();
        let mut encoded = folded.clone();
        let (name, bytes) = encode(Contents {
            folded: &mut encoded,
            records: 3,
            marks: &[],
            order: &order,
            metas: Some(&metas()),
            cached_at: None,
        })
        .expect("encode");
        assert_eq!(encoded.state, folded.state, "encoding puts the lists back");
        assert_eq!(records_in_name(&name), Some(3));
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    #[test]
    fn round_trip_and_partial_lists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folded = folded(1200);
        let file = SnapshotFile::open(&write(dir.path(), &folded)).expect("open");
        let full = file
            .load(Parts {
                writers: true,
                ..Parts::WHOLE
            })
            .expect("load");
        assert_eq!(full.folded.state, folded.state);
        assert_eq!(full.folded.anchors, folded.anchors);
        let newest = file
            .load(Parts {
                lists: Some(3),
                ..Parts::WHOLE
            })
            .expect("load");
        assert_eq!(newest.folded.state.observations.len(), 3);
        assert_eq!(newest.folded.state.observations[2].id, "obs-2");
        assert_eq!(file.list_counts().expect("counts"), (1200, 0));
        let (first, ids) = file.order_tail(2).expect("order");
        assert_eq!((first, ids), (1, vec!["r1".to_owned(), "r2".to_owned()]));
        assert_eq!(file.metas().expect("metas"), Some(metas()));
    }

    #[test]
    fn a_snapshot_with_its_marks_moved_holds_the_same_fold_and_a_damaged_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folded = folded(1200);
        let path = write(dir.path(), &folded);
        let file = SnapshotFile::open(&path).expect("open");
        let marks = vec![RolloutMark {
            segment: "c.jsonl".to_owned(),
            last_id: "r2".to_owned(),
            end: 300,
            line_bytes: 100,
        }];
        let (name, bytes) = file.with_marks(marks.clone()).expect("moved");
        assert_ne!(dir.path().join(&name), path, "a new header, a new name");
        assert_eq!(records_in_name(&name), Some(3));
        std::fs::write(dir.path().join(&name), bytes).expect("write");
        let moved = SnapshotFile::open(&dir.path().join(&name)).expect("open moved");
        assert_eq!(moved.header.marks, marks);
        let whole = Parts {
            writers: true,
            ..Parts::WHOLE
        };
        let loaded = moved.load(whole).expect("load");
        assert_eq!(loaded.folded.state, folded.state);
        assert_eq!(moved.metas().expect("metas"), Some(metas()));

        // A flipped byte in the body is caught on the way, not copied.
        let mut damaged = std::fs::read(&path).expect("read");
        let at = damaged.len() - 10;
        damaged[at] ^= 1;
        std::fs::write(&path, damaged).expect("write");
        let file = SnapshotFile::open(&path).expect("the header is whole");
        assert!(file.with_marks(marks).is_err());
    }

    /// The `ids` section answers for every id, in its own list only, without decoding it.
    #[test]
    fn the_ids_section_tells_which_ids_it_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = SnapshotFile::open(&write(dir.path(), &folded(1200))).expect("open");
        let holds = |observations: &[&str], evidence: &[&str]| {
            file.holds_any(observations, evidence).expect("ids")
        };
        assert!(holds(&["obs-0"], &[]));
        assert!(holds(&["zz", "obs-1199", "a"], &[]));
        assert!(holds(&["obs-1200", "obs-617"], &[]));
        assert!(!holds(&["obs-1200", "obs-", "obs-00", "obs-12000"], &[]));
        assert!(
            !holds(&[], &["obs-1"]),
            "an observation id is not an evidence id"
        );
        assert!(!holds(&[], &[]));
    }

    #[test]
    fn every_flipped_byte_is_caught_where_it_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), &folded(5));
        let bytes = std::fs::read(&path).expect("read");
        for at in (0..bytes.len()).step_by(7) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x20;
            std::fs::write(&path, &flipped).expect("write");
            let served = SnapshotFile::open(&path).and_then(|file| {
                file.load(Parts {
                    writers: true,
                    ..Parts::WHOLE
                })
            });
            if let Ok(loaded) = served {
                // Only a flip in a section `load` does not read can go unnoticed here.
                assert_eq!(
                    loaded.folded.state,
                    folded(5).state,
                    "a flip at byte {at} was served"
                );
            }
        }
    }

    #[test]
    fn alike_states_share_no_bytes_and_format_2_files_are_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = std::fs::read(write(dir.path(), &folded(600))).expect("read");
        let second = std::fs::read(write(dir.path(), &folded(601))).expect("read");
        // Git pairs files that share runs of bytes; veiled snapshots share no 16-byte run.
        let runs: std::collections::HashSet<&[u8]> = first.windows(16).collect();
        assert_eq!(
            second.windows(16).filter(|run| runs.contains(run)).count(),
            0
        );

        // The first file as format 2 wrote it: no seed, nothing veiled.
        let seed = u64::from_le_bytes(first[8..16].try_into().expect("8 bytes"));
        let mut unveiled = first[20..].to_vec();
        veil(seed, 0, &mut unveiled);
        let old = [MAGIC_UNVEILED.as_slice(), &first[16..20], &unveiled].concat();
        let old_path = dir.path().join("000000000003-0000000000000000.snapshot");
        std::fs::write(&old_path, old).expect("write");
        let load = |path: &Path| {
            let file = SnapshotFile::open(path).expect("open");
            (
                file.load(Parts::WHOLE).expect("load").folded.state,
                file.order().expect("order"),
            )
        };
        let veiled_path = write(dir.path(), &folded(600));
        assert_eq!(load(&old_path), load(&veiled_path));
        assert_eq!(load(&old_path).0, folded(600).state);
    }

    #[test]
    fn a_forged_block_length_is_refused_before_anything_is_allocated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), &folded(3));
        let original = std::fs::read(&path).expect("read");
        let snapshot = SnapshotFile::open(&path).expect("open");
        let mut unveiled = original[snapshot.body_start as usize..].to_vec();
        let (seed, veiled_from) = snapshot.veil.expect("format 3 is veiled");
        veil(seed, snapshot.body_start - veiled_from, &mut unveiled);
        // A format-2 file (nothing veiled) whose header, checksum and all, claims a block of
        // half the address space.
        let mut header = snapshot.header.clone();
        header.sections[0].blocks[0].len = u64::MAX / 2;
        let header_bytes = rmp_serde::to_vec_named(&header).expect("encode");
        let forged = [
            MAGIC_UNVEILED.as_slice(),
            &(header_bytes.len() as u32).to_le_bytes(),
            &header_bytes,
            &crc32fast::hash(&header_bytes).to_le_bytes(),
            &unveiled,
        ]
        .concat();
        let forged_path = dir.path().join("000000000003-0000000000000001.snapshot");
        std::fs::write(&forged_path, forged).expect("write");
        let opened = SnapshotFile::open(&forged_path).expect("the header itself is whole");
        let err = opened.load(Parts::WHOLE).expect_err("the block is refused");
        assert!(err.to_string().contains("outside the file"), "{err:#}");
    }

    /// The keystream byte at `at`, one byte at a time: what `veil` must XOR there.
    fn key_at(seed: u64, at: u64) -> u8 {
        splitmix64(seed ^ (at / 8)).to_le_bytes()[(at % 8) as usize]
    }

    #[test]
    fn the_veil_xors_each_byte_with_the_keystream_at_its_position() {
        let seed = 0x0123_4567_89ab_cdef;
        for position in [0u64, 1, 5, 7, 8, 9, 1000, 1003] {
            for len in [0usize, 1, 3, 7, 8, 9, 15, 16, 17, 64, 70] {
                let plain: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                let mut veiled = plain.clone();
                veil(seed, position, &mut veiled);
                let expected: Vec<u8> = (plain.iter().enumerate())
                    .map(|(i, byte)| byte ^ key_at(seed, position + i as u64))
                    .collect();
                assert_eq!(veiled, expected, "position {position}, {len} bytes");
                veil(seed, position, &mut veiled);
                assert_eq!(veiled, plain, "veiling twice unveils");
            }
        }
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(
            records_in_name("000000000012-0123456789abcdef.snapshot"),
            Some(12)
        );
        assert_eq!(records_in_name("12-0123456789abcdef.snapshot"), None);
        assert_eq!(records_in_name("000000000012-0123456789abcdef.tmp"), None);
    }
}
