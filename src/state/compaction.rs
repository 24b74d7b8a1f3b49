//! Compacted segments (docs/store.md#compaction): a segment that is the byte-for-byte
//! concatenation of committed segments, in name order, beside a manifest that names them
//! (`<segment stem>.parts`, tracked like the segments: one `<name> <bytes>` line per part).
//!
//! The manifest is what lets everything else keep working across a compaction: the lost-records
//! check accepts a committed segment the work tree no longer holds when a listed compacted
//! segment holds its bytes, and a fold cached before the compaction (in any clone) serves on,
//! its marks moved into the compacted segment. This module owns the manifest's format and
//! that move; the store (`store::compact`) writes them.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;

use crate::state::fs;
use crate::state::segments::SEGMENT_SUFFIX;
use crate::state::snapshot::RolloutMark;

/// The suffix of a compacted segment's manifest, after the segment's stem.
pub const PARTS_SUFFIX: &str = ".parts";

/// The most of one manifest that is read (a line per part: 10,000 parts take about 700 KiB).
const MANIFEST_LIMIT: u64 = 16 * 1024 * 1024;

/// One segment a compacted segment holds, and how many bytes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The segment's file name.
    pub name: String,
    /// Its length: all of it, every line complete.
    pub bytes: u64,
}

/// A compacted segment and the parts it holds, in the order it holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The compacted segment's file name.
    pub segment: String,
    /// Its parts, in name order.
    pub parts: Vec<Part>,
}

impl Compacted {
    /// The manifest's file name.
    pub fn manifest_name(&self) -> String {
        manifest_name(&self.segment)
    }

    /// How long the compacted segment is: its parts, end to end.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|part| part.bytes).sum()
    }

    /// The manifest's text: a `<name> <bytes>` line per part.
    pub fn manifest(&self) -> String {
        (self.parts.iter())
            .map(|part| format!("{} {}\n", part.name, part.bytes))
            .collect()
    }

    /// Reads the manifest `text` of the compacted `segment`: `None` unless every line is a
    /// segment name and a length.
    pub fn parse(segment: &str, text: &str) -> Option<Compacted> {
        let parts = (text.lines())
            .map(|line| {
                let (name, bytes) = line.split_once(' ')?;
                let plain = !name.starts_with('.') && !name.contains(['/', '\\']);
                (plain && name.ends_with(SEGMENT_SUFFIX)).then_some(())?;
                Some(Part {
                    name: name.to_owned(),
                    bytes: bytes.parse().ok()?,
                })
            })
            .collect::<Option<Vec<Part>>>()?;
        (!parts.is_empty()).then(|| Compacted {
            segment: segment.to_owned(),
            parts,
        })
    }
}

/// The most of a compacted segment one part may make up, as a fraction (`PART_SHARE_MOST.0 /
/// PART_SHARE_MOST.1`). Git pairs a removed file with an added one as a rename when half or more
/// of the larger one's bytes are the smaller one's: a compaction in which one part made up half
/// would read as that part renamed, and two branches that compacted it differently would stop
/// their merge with `CONFLICT (rename/rename)` or `(rename/delete)`. Under 40 % leaves git's
/// estimate room.
const PART_SHARE_MOST: (u64, u64) = (2, 5);

/// Which of `sizes` (in name order) to compact: the largest are left out, one at a time, until
/// none makes up more than [`PART_SHARE_MOST`] of the rest together. Answers the positions
/// kept and left out; fewer than two kept means nothing to compact.
///
/// The sizes this leaves grow like a binary counter's digits: a compacted segment is joined
/// again only once as much again (and a half) has been written after it, so a store holds a
/// few compacted segments of growing size, never thousands of files.
pub fn select_parts(sizes: &[u64]) -> (Vec<usize>, Vec<usize>) {
    let mut kept: Vec<usize> = (0..sizes.len()).collect();
    let mut left = Vec::new();
    loop {
        let total: u64 = kept.iter().map(|&at| sizes[at]).sum();
        let Some(largest) = (kept.iter().copied()).max_by_key(|&at| (sizes[at], at)) else {
            break;
        };
        if sizes[largest] * PART_SHARE_MOST.1 <= total * PART_SHARE_MOST.0 {
            break;
        }
        kept.retain(|&at| at != largest);
        left.push(largest);
    }
    left.sort_unstable();
    (kept, left)
}

/// The manifest's file name of the compacted segment `segment`.
pub fn manifest_name(segment: &str) -> String {
    let stem = segment.strip_suffix(SEGMENT_SUFFIX).unwrap_or(segment);
    format!("{stem}{PARTS_SUFFIX}")
}

/// The compacted segments whose manifests lie in `dir` and who are listed in `lengths` whole
/// (as long as their parts together): a manifest that is a link, too large, unreadable or
/// malformed, or whose segment is gone or shorter, vouches for nothing.
pub fn read_manifests(dir: &Path, lengths: &BTreeMap<String, u64>) -> Vec<Compacted> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<Compacted> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let stem = name.strip_suffix(PARTS_SUFFIX)?;
            let segment = format!("{stem}{SEGMENT_SUFFIX}");
            let listed = *lengths.get(&segment)?;
            let bytes = fs::read_below(dir, &entry.path(), MANIFEST_LIMIT).ok()??;
            let compacted = Compacted::parse(&segment, std::str::from_utf8(&bytes).ok()?)?;
            (listed >= compacted.bytes()).then_some(compacted)
        })
        .collect();
    found.sort_by(|a, b| a.segment.cmp(&b.segment));
    found
}

/// `marks` moved into the compacted segments that hold the segments they name, for the
/// segments `listed` no longer holds: `None` when some such mark cannot be moved.
///
/// A fold can continue in a compacted segment only where the records it holds of it are a
/// prefix of it: every part before one is held whole, that one up to its mark (or whole), and
/// nothing of the parts after it; the lines past that point are then exactly the lines the
/// fold had not folded, as they were past the old marks. A mark of a part that was not whole
/// when compacted (it reached past the part's length) cannot be moved either.
pub fn remap_marks(
    marks: &[RolloutMark],
    listed: &BTreeMap<String, u64>,
    compacted: &[Compacted],
) -> Option<Vec<RolloutMark>> {
    let unlisted: BTreeSet<&str> = (marks.iter())
        .map(|mark| mark.segment.as_str())
        .filter(|name| !listed.contains_key(*name))
        .collect();
    let mut remapped: Vec<RolloutMark> = (marks.iter())
        .filter(|mark| listed.contains_key(&mark.segment))
        .cloned()
        .collect();
    if unlisted.is_empty() {
        return Some(remapped);
    }
    let by_name: BTreeMap<&str, &RolloutMark> = (marks.iter())
        .map(|mark| (mark.segment.as_str(), mark))
        .collect();
    let mut moved = BTreeSet::new();
    for into in compacted {
        let gone: Vec<&str> = (into.parts.iter())
            .map(|part| part.name.as_str())
            .filter(|name| unlisted.contains(name))
            .collect();
        if gone.is_empty() {
            continue;
        }
        let mark = prefix_mark(into, &by_name)?;
        moved.extend(gone);
        remapped.retain(|mark| mark.segment != into.segment);
        remapped.push(mark);
    }
    (moved.len() == unlisted.len()).then_some(remapped)
}

/// The one mark in `into` that stands for the marks `by_name` holds of its parts, when they
/// hold a prefix of it (see [`remap_marks`]).
fn prefix_mark(into: &Compacted, by_name: &BTreeMap<&str, &RolloutMark>) -> Option<RolloutMark> {
    let mut start = 0;
    let mut last: Option<RolloutMark> = None;
    for part in &into.parts {
        let Some(mark) = by_name.get(part.name.as_str()) else {
            // Nothing of this part is held: nothing after it may be.
            let mut rest = into.parts.iter().skip_while(|p| p.name != part.name);
            return rest
                .all(|p| !by_name.contains_key(p.name.as_str()))
                .then_some(last)
                .flatten();
        };
        if mark.end > part.bytes || last.as_ref().is_some_and(|l| l.end != start) {
            return None;
        }
        last = Some(RolloutMark {
            segment: into.segment.clone(),
            last_id: mark.last_id.clone(),
            end: start + mark.end,
            line_bytes: mark.line_bytes,
        });
        start += part.bytes;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(segment: &str, end: u64) -> RolloutMark {
        RolloutMark {
            segment: segment.to_owned(),
            last_id: format!("{segment}@{end}"),
            end,
            line_bytes: 10,
        }
    }

    fn compacted(segment: &str, parts: &[(&str, u64)]) -> Compacted {
        Compacted {
            segment: segment.to_owned(),
            parts: (parts.iter())
                .map(|(name, bytes)| Part {
                    name: (*name).to_owned(),
                    bytes: *bytes,
                })
                .collect(),
        }
    }

    fn listed(names: &[(&str, u64)]) -> BTreeMap<String, u64> {
        (names.iter()).map(|(n, l)| ((*n).to_owned(), *l)).collect()
    }

    #[test]
    fn a_manifest_reads_back_as_written_and_refuses_what_is_not_one() {
        let written = compacted("c.jsonl", &[("a.jsonl", 30), ("b.jsonl", 20)]);
        assert_eq!(
            Compacted::parse("c.jsonl", &written.manifest()),
            Some(written.clone())
        );
        assert_eq!(written.bytes(), 50);
        assert_eq!(written.manifest_name(), "c.parts");
        for bad in [
            "",
            "a.jsonl",
            "a.jsonl x",
            "../a.jsonl 3",
            "a.txt 3",
            ".a.jsonl 3",
        ] {
            assert_eq!(Compacted::parse("c.jsonl", bad), None, "{bad:?}");
        }
    }

    #[test]
    fn marks_of_parts_held_whole_move_to_the_compacted_segment_end() {
        let into = compacted("c.jsonl", &[("a.jsonl", 30), ("b.jsonl", 20)]);
        let marks = [mark("a.jsonl", 30), mark("b.jsonl", 20), mark("d.jsonl", 5)];
        let moved = remap_marks(&marks, &listed(&[("c.jsonl", 50), ("d.jsonl", 9)]), &[into])
            .expect("movable");
        assert_eq!(moved.len(), 2);
        assert_eq!(moved[0], mark("d.jsonl", 5));
        assert_eq!(
            moved[1],
            RolloutMark {
                segment: "c.jsonl".to_owned(),
                last_id: "b.jsonl@20".to_owned(),
                end: 50,
                line_bytes: 10,
            }
        );
    }

    #[test]
    fn a_fold_holding_a_prefix_continues_where_its_last_part_stopped() {
        let into = compacted(
            "c.jsonl",
            &[("a.jsonl", 30), ("b.jsonl", 20), ("e.jsonl", 7)],
        );
        // b only in part, e not at all: the lines past c's mark are b's rest and e.
        let marks = [mark("a.jsonl", 30), mark("b.jsonl", 12)];
        let moved = remap_marks(&marks, &listed(&[("c.jsonl", 57)]), &[into]).expect("prefix");
        assert_eq!(moved.len(), 1);
        assert_eq!((moved[0].segment.as_str(), moved[0].end), ("c.jsonl", 42));
    }

    #[test]
    fn a_fold_that_holds_no_prefix_or_a_part_unaccounted_for_cannot_move() {
        let into = compacted("c.jsonl", &[("a.jsonl", 30), ("b.jsonl", 20)]);
        let list = listed(&[("c.jsonl", 50)]);
        // Holds b but not a: the lines of a would lie before the mark.
        assert_eq!(
            remap_marks(&[mark("b.jsonl", 20)], &list, std::slice::from_ref(&into)),
            None
        );
        // Holds a only in part, and b.
        let partial = [mark("a.jsonl", 10), mark("b.jsonl", 20)];
        assert_eq!(
            remap_marks(&partial, &list, std::slice::from_ref(&into)),
            None
        );
        // Reaches past what was compacted of b.
        let past = [mark("a.jsonl", 30), mark("b.jsonl", 25)];
        assert_eq!(remap_marks(&past, &list, std::slice::from_ref(&into)), None);
        // Names a segment no manifest holds.
        let lost = [mark("a.jsonl", 30), mark("z.jsonl", 3)];
        assert_eq!(remap_marks(&lost, &list, &[into]), None);
    }

    #[test]
    fn a_part_two_merged_compactions_both_hold_moves_into_each() {
        // Two branches compacted overlapping parts, and were merged.
        let ours = compacted("c1.jsonl", &[("a.jsonl", 30), ("b.jsonl", 20)]);
        let theirs = compacted("c2.jsonl", &[("a.jsonl", 30)]);
        let marks = [mark("a.jsonl", 30), mark("b.jsonl", 20)];
        let list = listed(&[("c1.jsonl", 50), ("c2.jsonl", 30)]);
        let moved = remap_marks(&marks, &list, &[ours, theirs]).expect("movable");
        let ends: Vec<(&str, u64)> = (moved.iter())
            .map(|mark| (mark.segment.as_str(), mark.end))
            .collect();
        assert_eq!(ends, [("c1.jsonl", 50), ("c2.jsonl", 30)]);
    }

    #[test]
    fn no_part_is_left_to_make_up_as_much_as_git_takes_for_a_rename() {
        // Two alike parts are half each: nothing to compact.
        assert_eq!(select_parts(&[100, 100]), (vec![], vec![0, 1]));
        // Three alike parts: a third each.
        assert_eq!(select_parts(&[100, 90, 110]), (vec![0, 1, 2], vec![]));
        // A compacted segment and a few parts written since: it stays until they outweigh it.
        assert_eq!(select_parts(&[1000, 10, 10, 10]), (vec![1, 2, 3], vec![0]));
        assert_eq!(
            select_parts(&[1000, 600, 600, 600]),
            (vec![0, 1, 2, 3], vec![])
        );
        for (kept, _) in [
            select_parts(&[5, 1, 1, 1, 1, 1, 1, 9]),
            select_parts(&[3; 7]),
        ] {
            assert!(kept.len() >= 3);
        }
        let sizes = [400, 1, 2, 300, 7, 250, 9];
        let (kept, left) = select_parts(&sizes);
        let total: u64 = kept.iter().map(|&at| sizes[at]).sum();
        assert!(
            kept.iter().all(|&at| sizes[at] * 5 <= total * 2),
            "{kept:?}"
        );
        assert_eq!(kept.len() + left.len(), sizes.len());
    }

    #[test]
    fn marks_of_listed_segments_stay_as_they_are() {
        let marks = [mark("a.jsonl", 30)];
        let list = listed(&[("a.jsonl", 30)]);
        assert_eq!(remap_marks(&marks, &list, &[]), Some(marks.to_vec()));
    }
}
