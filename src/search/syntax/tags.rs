//! Tags from a tags query, within a budget of CPU time and memory per file.
//!
//! A tags query follows tree-sitter's convention: `@name` captures a name and
//! `@definition.<kind>` or `@reference.<kind>` the node it names, and ours adds
//! `@declaration.<kind>` ([`Role`]); other captures (`@doc`) are not read. A name keeps the tag
//! of the first pattern that tags it, as `tree-sitter-tags` does, except that a declaration
//! wins over a reference.
//!
//! Both the parse and the query walk stop once the file has used its [`budget`], or once the
//! command's [`Deadline`] for all its parses has passed (a file cut there is [`Stopped::Late`],
//! not its own fault). Real code
//! stays inside it; deeply nested code would not: over a line of a million open parentheses
//! the query walk climbs the whole depth of the tree at every step, and a million nested calls
//! made the parser allocate gigabytes. `tree-sitter-tags` runs its query walk without a
//! progress callback, so that walk could not be stopped; this module walks the same queries
//! with one. Pure but for reading the clocks and the thread's memory count.

use std::cell::Cell;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::ops::Range;
use std::time::Duration;
use std::time::Instant;

use tree_sitter::Language;
use tree_sitter::ParseOptions;
use tree_sitter::Parser;
use tree_sitter::Query;
use tree_sitter::QueryCursor;
use tree_sitter::QueryCursorOptions;
use tree_sitter::QueryError;
use tree_sitter::QueryMatch;
use tree_sitter::StreamingIterator;
use tree_sitter::Tree;

use super::memory;
use crate::policy::code_map::Form;

/// How many bytes of a name's line a signature keeps.
const MAX_LINE_BYTES: usize = 180;

/// A compiled tags query.
pub struct TagQuery {
    language: Language,
    query: Query,
    /// The index of the `@name` capture.
    name: Option<u32>,
    /// The index of the `@nested` capture: a node whose inside is source of the same language
    /// (a Rust macro invocation's body), for the caller to tag again.
    nested: Option<u32>,
    /// Per capture index, the tag kind it marks (`definition.function` → `function`) and
    /// its role.
    kinds: Vec<Option<(String, Role)>>,
}

impl TagQuery {
    /// Compiles `source`, a tags query, for `language`.
    pub fn new(language: Language, source: &str) -> Result<Self, QueryError> {
        let query = Query::new(&language, source)?;
        let (mut name, mut nested) = (None, None);
        let kinds = (query.capture_names().iter().enumerate())
            .map(|(index, capture)| {
                match *capture {
                    "name" => name = u32::try_from(index).ok(),
                    "nested" => nested = u32::try_from(index).ok(),
                    _ => {}
                }
                let (kind, role) = match capture.split_once('.') {
                    Some(("definition", kind)) => (kind, Role::Definition),
                    Some(("declaration", kind)) => (kind, Role::Declaration),
                    Some(("reference", kind)) => (kind, Role::Reference),
                    _ => return None,
                };
                Some((kind.to_owned(), role))
            })
            .collect();
        Ok(TagQuery {
            language,
            query,
            name,
            nested,
            kinds,
        })
    }
}

/// What a tag says of the name it tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The name is defined there: a function, a type, a method, ... (`@definition.*`).
    Definition,
    /// The name is declared there, a field, a constant, an enum member, ...
    /// (`@declaration.*`): retrieval and code references find it, the map leaves it out.
    Declaration,
    /// The name is used there (`@reference.*`).
    Reference,
}

/// One tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag<'q> {
    /// What it says of the name.
    pub role: Role,
    /// Its kind: `function`, `class`, `call`, ...
    pub kind: &'q str,
    /// The bytes of the name.
    pub name: Range<usize>,
    /// The bytes of the tagged node, name included.
    pub range: Range<usize>,
    /// The bytes of the name's line, without its leading and trailing white space, cut at
    /// [`MAX_LINE_BYTES`].
    pub line: Range<usize>,
    /// How a reference names it: as a macro (the tagged node a `macro_invocation`), as a
    /// member (a `.` before the name: `value.name()`, or `server.Server`, which may be
    /// another package's) or plainly.
    pub form: Form,
}

/// What a tags query found in a file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tagged<'q> {
    /// The tags, in the order of their names.
    pub tags: Vec<Tag<'q>>,
    /// The bytes of every node captured as `@nested`, in file order.
    pub nested: Vec<Range<usize>>,
}

/// Why a file was not parsed and tagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It used up its own budget: generated or hostile code.
    OverBudget,
    /// The command's deadline for all its parses passed first.
    Late,
}

/// When a command stops parsing: every parse it does shares it, so that a command that
/// promises its time keeps it whatever the repository holds. Made by the command's context
/// ([`crate::ctx::Ctx::parse_deadline`]); [`Deadline::NONE`] for work that must parse every
/// file (the index, the check of a write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// No deadline.
    pub const NONE: Deadline = Deadline(None);

    /// A deadline at `instant`.
    pub fn at(instant: Instant) -> Deadline {
        Deadline(Some(instant))
    }

    /// Whether it has passed.
    pub fn is_past(self) -> bool {
        self.0.is_some_and(|at| Instant::now() >= at)
    }

    /// When it passes; `None` for [`Deadline::NONE`].
    pub fn instant(self) -> Option<Instant> {
        self.0
    }

    /// This deadline, or `bound` when that comes first.
    pub fn or_sooner(self, bound: Option<Instant>) -> Deadline {
        match (self.0, bound) {
            (Some(at), Some(bound)) => Deadline(Some(at.min(bound))),
            (at, bound) => Deadline(at.or(bound)),
        }
    }
}

/// What parsing and tagging one file may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// CPU time of the thread.
    pub cpu: Duration,
    /// Bytes tree-sitter may take on this thread beyond what it held when the parse began
    /// (the parser and cursor kept for the thread hold the rest), counted where the binary
    /// installed its allocator ([`super::memory`]), together with the tags found so far
    /// ([`TAG_BYTES`] each).
    pub memory: usize,
    /// The command's deadline.
    pub deadline: Deadline,
}

/// The budget of a file of `bytes`.
///
/// CPU time: a tenth of a second and two microseconds per byte (0.5 MB/s). Real code goes at
/// about 5 MB/s on one core (cargo's Rust), dense code at about 2.4 MB/s (a 3.7 MB minified
/// bundle, 3.9 MB of one-line C functions), so it has over 4 times its need; hostile code is
/// far slower (50,000 nested calls in 150 KB of C: 17 s, 110 µs per byte). It is CPU time, so
/// that a busy machine does not leave a file unparsed.
///
/// Memory: 16 MiB and 128 bytes per byte. Real code holds at most about 60 bytes per byte at
/// its peak (cargo's Rust over 20 KB, the one-line C), a 4 MB minified bundle 64; 1.9 million
/// nested arrays in 3.8 MB of JavaScript took 1.3 GB, 340 bytes per byte, within its time
/// budget (bench/hostile-memory.sh). It is never more than all parses of the process share
/// ([`memory::SHARED`], 160 MiB), so that no command's parses hold more, however large the
/// file: real code over about 2.5 MB (a minified bundle, generated C) may go over it and is
/// then judged by its lines, as a hostile file is. A parse is granted this memory from that
/// share ([`super::memory::grant`]) before it starts.
pub fn budget(bytes: usize) -> Budget {
    let wide = u64::try_from(bytes).unwrap_or(u64::MAX);
    Budget {
        cpu: Duration::from_millis(100) + Duration::from_nanos(wide.saturating_mul(2_000)),
        memory: (16_usize << 20)
            .saturating_add(bytes.saturating_mul(128))
            .min(memory::SHARED),
        deadline: Deadline::NONE,
    }
}

thread_local! {
    static TOOLS: RefCell<(Parser, QueryCursor)> = RefCell::new((Parser::new(), QueryCursor::new()));
}

/// The most the parser and query cursor kept for a thread may hold past a parse (1 MiB).
const TOOLS_KEPT: isize = 1 << 20;

/// Replaces this thread's parser and query cursor with fresh ones when they hold over
/// [`TOOLS_KEPT`] more than `before`, what the thread held before a parse whose trees are
/// dropped since: over a deep file they grow their stacks to its depth and keep them (32 MiB
/// after a million nested parentheses of C), which no later parse's budget counts.
pub(super) fn shed_tools(before: isize) {
    if memory::held() > before.saturating_add(TOOLS_KEPT) {
        TOOLS.with(|tools| *tools.borrow_mut() = (Parser::new(), QueryCursor::new()));
    }
}

/// The tags `query` finds in `source`, in the order of their names, and its `@nested` nodes,
/// within `budget`.
pub fn tags<'q>(query: &'q TagQuery, source: &[u8], budget: Budget) -> Result<Tagged<'q>, Stopped> {
    tags_and_tree(query, source, budget).map(|(tagged, _)| tagged)
}

/// [`tags`], and the syntax tree they were found in, for a caller that reads more of it.
pub fn tags_and_tree<'q>(
    query: &'q TagQuery,
    source: &[u8],
    budget: Budget,
) -> Result<(Tagged<'q>, Tree), Stopped> {
    let mut meter = Meter::start(budget);
    TOOLS.with(|tools| {
        let (parser, cursor) = &mut *tools.borrow_mut();
        // Only a grammar of another ABI is refused, and compiling its query refused it first.
        parser
            .set_language(&query.language)
            .map_err(|_| Stopped::OverBudget)?;
        parser.reset();
        let mut read = |at: usize, _: tree_sitter::Point| source.get(at..).unwrap_or_default();
        let mut on_parse = |_: &tree_sitter::ParseState| meter.tick(0);
        let options = ParseOptions::new().progress_callback(&mut on_parse);
        let Some(tree) = parser.parse_with_options(&mut read, None, Some(options)) else {
            parser.reset();
            return Err(meter.stopped.unwrap_or(Stopped::OverBudget));
        };
        // What the tags found so far hold, counted with the tree.
        let kept = Cell::new(0);
        let mut on_query = |_: &tree_sitter::QueryCursorState| meter.tick(kept.get());
        let options = QueryCursorOptions::new().progress_callback(&mut on_query);
        let mut matches =
            cursor.matches_with_options(&query.query, tree.root_node(), source, options);
        // By name, (end, start): the first pattern to tag a name wins, but a declaration wins
        // over a reference (a type alias's name is a type too), as with no reference patterns.
        let mut found: BTreeMap<(usize, usize), (usize, Tag<'q>)> = BTreeMap::new();
        let mut nested = Vec::new();
        while let Some(matched) = matches.next() {
            nested.extend(
                (matched.captures.iter())
                    .filter(|capture| Some(capture.index) == query.nested)
                    .map(|capture| capture.node.byte_range()),
            );
            let Some(tag) = tag_of(query, matched, source) else {
                continue;
            };
            let key = (tag.name.end, tag.name.start);
            let wins = |(pattern, kept): &(usize, Tag)| match (kept.role, tag.role) {
                (Role::Reference, Role::Declaration) => true,
                (Role::Declaration, Role::Reference) => false,
                _ => *pattern > matched.pattern_index,
            };
            if found.get(&key).is_none_or(wins) {
                found.insert(key, (matched.pattern_index, tag));
            }
            kept.set(found.len() * TAG_BYTES + nested.len() * size_of::<Range<usize>>());
        }
        drop(matches);
        if let Some(stopped) = meter.stopped {
            return Err(stopped);
        }
        nested.sort_by_key(|range| range.start);
        let tagged = Tagged {
            tags: found.into_values().map(|(_, tag)| tag).collect(),
            nested,
        };
        Ok((tagged, tree))
    })
}

/// What one tag costs until the outline is made from it: its entry in the map by name's
/// place (96 bytes) and the map's nodes around it, then its place in the list the map becomes.
/// Counted against the file's memory with the tree: 180,000 calls in 1.35 MB of Python held
/// 50 MB of tags beside a tree of 150 MiB.
const TAG_BYTES: usize = 256;

/// A file's budget being used, checked on every progress callback of the parser or the query
/// walk (they come every hundred steps; over a deep tree, one step of the walk can take
/// milliseconds), the tags found so far counted with the memory the tree holds. The thread's
/// CPU clock is a system call, 7% of a full index when read on every callback; the wall clock
/// is not, and the thread cannot use CPU time faster than wall time, so the CPU clock is read
/// only once the wall clock says the rest of the budget could be gone. The memory count is a
/// thread-local read; the command's deadline is wall time.
struct Meter {
    cpu_limit: Duration,
    next_reading: Instant,
    memory_limit: isize,
    deadline: Deadline,
    stopped: Option<Stopped>,
}

impl Meter {
    fn start(budget: Budget) -> Meter {
        let memory = isize::try_from(budget.memory).unwrap_or(isize::MAX);
        Meter {
            cpu_limit: thread_cpu_time() + budget.cpu,
            next_reading: Instant::now() + budget.cpu,
            memory_limit: memory::held().saturating_add(memory),
            deadline: budget.deadline,
            stopped: None,
        }
    }

    /// Reads the budget, with `kept` bytes held beside what tree-sitter holds.
    fn tick(&mut self, kept: usize) -> ControlFlow<()> {
        if self.stopped.is_none() {
            self.stopped = self.reading(isize::try_from(kept).unwrap_or(isize::MAX));
        }
        match self.stopped {
            Some(_) => ControlFlow::Break(()),
            None => ControlFlow::Continue(()),
        }
    }

    /// Why the parse must stop now, if it must.
    fn reading(&mut self, kept: isize) -> Option<Stopped> {
        if memory::held().saturating_add(kept) > self.memory_limit {
            return Some(Stopped::OverBudget);
        }
        if self.deadline.is_past() {
            return Some(Stopped::Late);
        }
        let now = Instant::now();
        if now >= self.next_reading {
            match self.cpu_limit.checked_sub(thread_cpu_time()) {
                Some(left) if !left.is_zero() => self.next_reading = now + left,
                _ => return Some(Stopped::OverBudget),
            }
        }
        None
    }
}

/// The tag a match makes: its `@name` capture tagged by its `@definition.*` or `@reference.*`
/// capture; none without both, or when the name holds a syntax error.
fn tag_of<'q>(query: &'q TagQuery, matched: &QueryMatch, source: &[u8]) -> Option<Tag<'q>> {
    let mut name = None;
    let mut tagged = None;
    for capture in matched.captures {
        if Some(capture.index) == query.name {
            name = Some(capture.node);
        }
        if let Some(Some((kind, role))) = query.kinds.get(capture.index as usize) {
            tagged = Some((capture.node, kind.as_str(), *role));
        }
    }
    let (name, (node, kind, role)) = (name?, tagged?);
    if name.has_error() {
        return None;
    }
    // Columns count bytes.
    let line_start = name
        .start_byte()
        .saturating_sub(name.start_position().column);
    let form = if node.kind() == "macro_invocation" {
        Form::Macro
    } else if after_member_access(source, name.start_byte()) {
        Form::Member
    } else {
        Form::Plain
    };
    let (name, node) = (name.byte_range(), node.byte_range());
    Some(Tag {
        role,
        kind,
        form,
        line: line_from(source, line_start),
        range: node.start.min(name.start)..node.end.max(name.end),
        name,
    })
}

/// Whether the name at byte `start` follows a member access: `.` or `?.` and white space
/// (`value.name`, `value?.name`, `value\n    .name`), not a range or a spread (`0..name`,
/// `...name`). (The queries tag no C or C++ member calls, so `->` never comes.) Read from the
/// bytes, not the tree: finding a node's parent in tree-sitter climbs from the root, which
/// over a deep tree costs its depth per name.
fn after_member_access(source: &[u8], start: usize) -> bool {
    let before = source[..start].trim_ascii_end();
    before.ends_with(b".") && !before.ends_with(b"..")
}

/// The line of `source` that starts at byte `start`, without its leading and trailing white
/// space and cut at [`MAX_LINE_BYTES`] (at the last whole character when the cut falls inside
/// one). It reads at most that many bytes past the white space: a minified file is one line.
fn line_from(source: &[u8], mut start: usize) -> Range<usize> {
    while start < source.len() && source[start].is_ascii_whitespace() {
        start += 1;
    }
    let window = &source[start..source.len().min(start + MAX_LINE_BYTES)];
    let length = match memchr::memchr(b'\n', window) {
        Some(newline) => newline,
        None => match std::str::from_utf8(window) {
            Ok(_) => window.len(),
            Err(error) => error.valid_up_to(),
        },
    };
    let mut end = start + length;
    while end > start && source[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    start..end
}

/// The CPU time this thread has used.
#[cfg(unix)]
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock exists on every unix we build for.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if read != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// The time since this thread first asked: without a per-thread CPU clock, the wall clock.
#[cfg(not(unix))]
fn thread_cpu_time() -> Duration {
    thread_local! {
        static START: Instant = Instant::now();
    }
    START.with(Instant::elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sooner_of_a_deadline_and_a_bound_is_kept() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(Deadline::NONE.or_sooner(None), Deadline::NONE);
        assert_eq!(Deadline::NONE.or_sooner(Some(now)), Deadline::at(now));
        assert_eq!(Deadline::at(later).or_sooner(None), Deadline::at(later));
        assert_eq!(Deadline::at(later).or_sooner(Some(now)), Deadline::at(now));
        assert_eq!(Deadline::at(now).or_sooner(Some(later)), Deadline::at(now));
    }

    fn rust(query: &str) -> TagQuery {
        TagQuery::new(tree_sitter_rust::LANGUAGE.into(), query).expect("query")
    }

    const FUNCTIONS: &str = "(function_item name: (identifier) @name) @definition.function";

    #[test]
    fn no_file_is_granted_more_memory_than_all_parses_share() {
        assert_eq!(budget(100_000).memory, (16 << 20) + 12_800_000);
        assert_eq!(budget(4 << 20).memory, memory::SHARED);
        assert_eq!(budget(usize::MAX).memory, memory::SHARED);
    }

    #[test]
    fn a_file_stops_when_its_budget_is_used_up() {
        let query = rust(FUNCTIONS);
        let text = "fn a() { b(c(d)) }\n".repeat(2_000);
        let no_time = Budget {
            cpu: Duration::ZERO,
            ..budget(text.len())
        };
        assert_eq!(
            tags(&query, text.as_bytes(), no_time),
            Err(Stopped::OverBudget)
        );
        let past = Budget {
            deadline: Deadline::at(Instant::now()),
            ..budget(text.len())
        };
        assert_eq!(tags(&query, text.as_bytes(), past), Err(Stopped::Late));
        let found = tags(&query, text.as_bytes(), budget(text.len())).expect("in time");
        assert_eq!(found.tags.len(), 2_000);
        // The parser and the cursor kept for the thread work again after a stop.
        assert_eq!(
            tags(&query, b"fn z() {}", budget(9))
                .expect("in time")
                .tags
                .len(),
            1
        );
    }

    #[test]
    fn a_parse_stops_once_it_holds_more_than_its_memory() {
        let mut meter = Meter::start(Budget {
            cpu: Duration::from_secs(60),
            memory: 1_000,
            deadline: Deadline::NONE,
        });
        assert_eq!(meter.tick(0), ControlFlow::Continue(()));
        memory::allocated(1_000);
        assert_eq!(meter.tick(0), ControlFlow::Continue(()));
        memory::allocated(1);
        assert_eq!(meter.tick(0), ControlFlow::Break(()));
        // Once stopped, it stays stopped.
        memory::released(1_001);
        assert_eq!(meter.tick(0), ControlFlow::Break(()));
        // The tags found so far count with what tree-sitter holds.
        let mut meter = Meter::start(Budget {
            cpu: Duration::from_secs(60),
            memory: 1_000,
            deadline: Deadline::NONE,
        });
        memory::allocated(600);
        assert_eq!(meter.tick(400), ControlFlow::Continue(()));
        assert_eq!(meter.tick(401), ControlFlow::Break(()));
        memory::released(600);
    }

    #[test]
    fn a_name_keeps_the_tag_of_the_first_pattern() {
        let query = rust(&format!(
            "{}\n(function_item name: (identifier) @name) @reference.call\n\
             (call_expression function: (identifier) @name) @reference.call",
            FUNCTIONS.replace("definition.function", "definition.first")
        ));
        let text = "fn a() {\n    b()\n}\n";
        let found = tags(&query, text.as_bytes(), budget(text.len()))
            .expect("in time")
            .tags;
        let shown: Vec<(&str, Role, &str, &str)> = (found.iter())
            .map(|tag| {
                let name = &text[tag.name.clone()];
                (name, tag.role, tag.kind, &text[tag.line.clone()])
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("a", Role::Definition, "first", "fn a() {"),
                ("b", Role::Reference, "call", "b()")
            ]
        );
        assert_eq!(found[0].range, 0..text.len() - 1);
    }

    #[test]
    fn a_long_line_is_cut_at_a_whole_character() {
        let line = format!("  fn {}é(x: u8) {{}}\n", "a".repeat(MAX_LINE_BYTES - 4));
        // The cut falls inside `é`: the line stops before it.
        assert_eq!(line_from(line.as_bytes(), 0), 2..MAX_LINE_BYTES + 1);
        let short = "x\n\t fn a() {}  \nz";
        assert_eq!(&short[line_from(short.as_bytes(), 2)], "fn a() {}");
        assert_eq!(line_from(b"", 0), 0..0);
    }
}
