//! Code-aware tokenization: the tantivy analyzer that indexes and queries source text, and the
//! query-side stop list.
//!
//! Identifiers are split the way programmers read them: `snake_case`, `camelCase`, acronyms
//! (`HTTPServer` → `http`, `server`) and digit runs (`utf8` → `utf`, `8`), while the joined
//! identifier is kept as a token of its own so an exact identifier still matches best. Every
//! token is lowercased and English-stemmed, in documents and queries alike, so `validated`
//! finds `validate_patch`. Runs longer than [`MAX_WORD_BYTES`] are data (hashes, base64), not
//! words, and are dropped. No I/O and no scoring here.

use std::collections::HashMap;
use std::collections::HashSet;
use std::ops::Range;

use tantivy::tokenizer::Language;
use tantivy::tokenizer::LowerCaser;
use tantivy::tokenizer::Stemmer;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::tokenizer::Token;
use tantivy::tokenizer::TokenFilter;
use tantivy::tokenizer::TokenStream;
use tantivy::tokenizer::Tokenizer;

/// The name the analyzer is registered under in every index.
pub const ANALYZER: &str = "code";

/// Longer runs of word characters are skipped entirely.
pub const MAX_WORD_BYTES: usize = 64;

/// Words that carry no signal about *where* in a code base something is: English function
/// words, question words, and the verbs of change requests ("add", "fix", "support"), which
/// agents and commit subjects put in front of the words that matter.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    // English function and question words
    "a", "about", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "each", "for",
    "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me",
    "more", "most", "my", "no", "not", "now", "of", "on", "only", "or", "other", "our", "out",
    "over", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "under", "up", "via", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you",
    "your",
    // verbs of change requests
    "add", "adds", "added", "adding", "allow", "allows", "avoid", "change", "changes", "changed",
    "correctly", "ensure", "fix", "fixes", "fixed", "fixing", "handle", "handles", "improve",
    "instead", "make", "makes", "made", "properly", "remove", "removes", "removed", "support",
    "supports", "update", "updates", "updated", "use", "uses", "used", "using",
];

/// The name of the analyzer of normalised definition names: whitespace-separated, as given.
pub const NAMES: &str = "names";

/// The analyzer of the `defs` field: its text is already normalised names.
pub fn names_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(tantivy::tokenizer::WhitespaceTokenizer::default()).build()
}

/// The identifiers a query may name, normalised ([`crate::search::symbols::normalize`]): every
/// word that is not a stop word, and every pair and triple of adjacent words joined, so
/// "cancellation token" also looks for `CancellationToken`. Words shorter than three
/// characters are left out; so are duplicates.
pub fn query_identifiers(query: &str) -> Vec<String> {
    let words: Vec<&str> = query
        .split('`')
        .flat_map(words)
        .filter(|word| !is_stop_word(word))
        .collect();
    let mut found: Vec<String> = Vec::new();
    let mut push = |name: String| {
        if name.chars().count() >= 3 && !found.contains(&name) {
            found.push(name);
        }
    };
    for (index, word) in words.iter().enumerate() {
        push(crate::search::symbols::normalize(word));
        for width in 2..=3 {
            if let Some(group) = words.get(index..index + width) {
                push(crate::search::symbols::normalize(&group.concat()));
            }
        }
    }
    found
}

/// The analyzer used for every indexed field and every query.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default())
        .filter(LowerCaser)
        .filter(RememberedStems)
        .build()
}

/// The analyzer's tokens before stemming: the same tokens, one for one, lowercased. With
/// [`stemmer`], what a scan uses to stem only the tokens that can be a query term.
pub fn unstemmed_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default())
        .filter(LowerCaser)
        .build()
}

/// The stemmer of [`analyzer`] applied to one lowercased token of [`unstemmed_analyzer`].
pub fn stemmer() -> TextAnalyzer {
    TextAnalyzer::builder(tantivy::tokenizer::RawTokenizer::default())
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The analyzed terms of `text`, in order, with repetitions.
pub fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyzer
        .token_stream(text)
        .process(&mut |token| out.push(token.text.clone()));
    out
}

/// How much a query term counts.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    /// The analyzed term.
    pub text: String,
    /// Its weight: [`CODE_SPAN_WEIGHT`] inside a code span, 1 otherwise.
    pub weight: f32,
}

/// Weight of the terms of words inside a `` `code span` ``: a request that quotes a name
/// points at that name literally.
pub const CODE_SPAN_WEIGHT: f32 = 2.0;

/// A word of a query that is searched for: the word as typed, its weight, and its distinct
/// analyzed terms.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryWord {
    /// The word as the query spells it (the first spelling when repeated).
    pub word: String,
    /// [`CODE_SPAN_WEIGHT`] inside a code span, 1 otherwise (the larger when repeated).
    pub weight: f32,
    /// Its analyzed terms (`validatePatch`: the joined identifier and its stemmed parts).
    pub terms: Vec<String>,
}

/// The words a query searches for, in order of appearance, each once (compared lowercased).
/// Prose words that are stop words or single characters are dropped, unless that would leave
/// nothing, so `"add"` alone still searches; words in code spans are always kept and weigh
/// more. A word without terms (punctuation) is left out.
pub fn query_words(analyzer: &mut TextAnalyzer, query: &str) -> Vec<QueryWord> {
    let mut prose = Vec::new();
    let mut code = Vec::new();
    for (index, piece) in query.split('`').enumerate() {
        let words = words(piece);
        if index % 2 == 1 {
            code.extend(words.map(|word| (word, CODE_SPAN_WEIGHT)));
        } else {
            prose.extend(words.map(|word| (word, 1.0)));
        }
    }
    let useful: Vec<(&str, f32)> = prose
        .iter()
        .copied()
        .filter(|(word, _)| word.chars().count() > 1 && !is_stop_word(word))
        .collect();
    if !useful.is_empty() || !code.is_empty() {
        prose = useful;
    }
    let mut found: Vec<QueryWord> = Vec::new();
    for (word, weight) in prose.into_iter().chain(code) {
        if let Some(seen) = found
            .iter_mut()
            .find(|seen| seen.word.eq_ignore_ascii_case(word))
        {
            seen.weight = seen.weight.max(weight);
            continue;
        }
        let mut terms = tokens(analyzer, word);
        let mut distinct = HashSet::new();
        terms.retain(|term| distinct.insert(term.clone()));
        if !terms.is_empty() {
            found.push(QueryWord {
                word: word.to_owned(),
                weight,
                terms,
            });
        }
    }
    found
}

/// The distinct analyzed terms a query searches for ([`query_words`]), in order of
/// appearance, each with the largest weight of a word it comes from.
pub fn query_terms(analyzer: &mut TextAnalyzer, query: &str) -> Vec<QueryTerm> {
    let mut terms: Vec<QueryTerm> = Vec::new();
    let mut positions = HashMap::new();
    for word in query_words(analyzer, query) {
        for text in word.terms {
            match positions.get(&text) {
                Some(&position) => {
                    let term: &mut QueryTerm = &mut terms[position];
                    term.weight = term.weight.max(word.weight);
                }
                None => {
                    positions.insert(text.clone(), terms.len());
                    terms.push(QueryTerm {
                        text,
                        weight: word.weight,
                    });
                }
            }
        }
    }
    terms
}

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word.to_lowercase().as_str())
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The words of `text`, as the tokenizer delimits them.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut cursor = 0;
    std::iter::from_fn(move || {
        let word = next_word(text, cursor)?;
        cursor = word.end;
        Some(&text[word])
    })
}

/// Calls `each` with every identifier part of `text` as written (`validatePatch` gives
/// `validate`, `Patch`; no joined form, no stemming), skipping runs longer than
/// [`MAX_WORD_BYTES`]. The words an embedding model reads.
pub fn for_each_part(text: &str, mut each: impl FnMut(&str)) {
    let mut parts = Vec::new();
    let mut cursor = 0;
    while let Some(word) = next_word(text, cursor) {
        cursor = word.end;
        if word.len() > MAX_WORD_BYTES {
            continue;
        }
        parts.clear();
        identifier_parts(text, word, &mut parts);
        for part in &parts {
            each(&text[part.clone()]);
        }
    }
}

/// Splits source text into identifier parts, keeping joined identifiers (see module docs).
#[derive(Debug, Clone, Default)]
pub struct CodeTokenizer {
    token: Token,
    parts: Vec<Range<usize>>,
}

/// The token stream of [`CodeTokenizer`].
pub struct CodeTokenStream<'a> {
    text: &'a str,
    cursor: usize,
    /// The parts of the current word.
    parts: &'a mut Vec<Range<usize>>,
    /// The next token of the current word: 0 is the joined form when there are several parts,
    /// then one per part.
    next: usize,
    token: &'a mut Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.token.reset();
        self.parts.clear();
        CodeTokenStream {
            text,
            cursor: 0,
            parts: &mut self.parts,
            next: 0,
            token: &mut self.token,
        }
    }
}

impl CodeTokenStream<'_> {
    /// Tokens of the current word: the joined form (when several parts) and the parts.
    fn word_tokens(&self) -> usize {
        match self.parts.len() {
            0 | 1 => self.parts.len(),
            parts => parts + 1,
        }
    }

    /// Finds the next word that yields tokens and splits it into parts.
    fn next_word(&mut self) -> bool {
        while let Some(word) = next_word(self.text, self.cursor) {
            self.cursor = word.end;
            if word.len() > MAX_WORD_BYTES {
                continue;
            }
            self.parts.clear();
            self.next = 0;
            identifier_parts(self.text, word, self.parts);
            if !self.parts.is_empty() {
                return true;
            }
        }
        self.cursor = self.text.len();
        false
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next >= self.word_tokens() && !self.next_word() {
            return false;
        }
        self.token.text.clear();
        let joined = self.parts.len() > 1;
        let (from, to) = if joined && self.next == 0 {
            // The joined identifier, spelled the same whatever the convention:
            // `maxDepth`, `max_depth`, `max-depth` and `MAX_DEPTH` all give `max_depth`.
            for (index, part) in self.parts.iter().enumerate() {
                if index > 0 {
                    self.token.text.push('_');
                }
                self.token.text.push_str(&self.text[part.clone()]);
            }
            (self.parts[0].start, self.parts[self.parts.len() - 1].end)
        } else {
            let part = self.parts[self.next - usize::from(joined)].clone();
            self.token.text.push_str(&self.text[part.clone()]);
            (part.start, part.end)
        };
        self.next += 1;
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.token.position.wrapping_add(1);
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// The byte range of the next word at or after `from`: a run of letters, digits and
/// underscores, where a hyphen between two such characters also joins (`max-depth`, as CLI
/// flags, crate names and config keys spell identifiers). Every byte of every indexed file
/// passes through here, so ASCII is read as bytes and only the rest decoded.
fn next_word(text: &str, from: usize) -> Option<Range<usize>> {
    let mut at = from;
    let start = loop {
        let (c, length) = char_at(text, at)?;
        if is_word_char(c) {
            break at;
        }
        at += length;
    };
    let mut end = start;
    while let Some((c, length)) = char_at(text, end) {
        let joins_hyphen = c == '-'
            && end > start
            && char_at(text, end + 1).is_some_and(|(next, _)| is_word_char(next));
        if !is_word_char(c) && !joins_hyphen {
            break;
        }
        end += length;
    }
    Some(start..end)
}

/// The character at byte `at` of `text` (a character boundary) and its length in bytes.
fn char_at(text: &str, at: usize) -> Option<(char, usize)> {
    let &byte = text.as_bytes().get(at)?;
    if byte.is_ascii() {
        return Some((char::from(byte), 1));
    }
    let c = text.get(at..)?.chars().next()?;
    Some((c, c.len_utf8()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Upper,
    Lower,
    Digit,
}

fn class(c: char) -> CharClass {
    if c.is_numeric() {
        CharClass::Digit
    } else if c.is_uppercase() {
        CharClass::Upper
    } else {
        CharClass::Lower
    }
}

/// Pushes the byte ranges of a word's parts: split at underscores and hyphens, then at case
/// changes, acronym ends and digit boundaries.
fn identifier_parts(text: &str, word: Range<usize>, out: &mut Vec<Range<usize>>) {
    let mut offset = word.start;
    // Split as bytes: both separators are ASCII, so every piece is whole characters.
    for segment in text.as_bytes()[word].split(|&byte| byte == b'_' || byte == b'-') {
        if !segment.is_empty() {
            camel_parts(&text[offset..offset + segment.len()], offset, out);
        }
        offset += segment.len() + 1;
    }
}

/// Splits one underscore-free segment at case changes, acronym ends and digit boundaries.
fn camel_parts(segment: &str, base: usize, out: &mut Vec<Range<usize>>) {
    let mut chars = segment
        .char_indices()
        .map(|(offset, c)| (offset, class(c)))
        .peekable();
    let Some((_, mut previous)) = chars.next() else {
        return;
    };
    let mut start = 0;
    while let Some((offset, current)) = chars.next() {
        let next = chars.peek().map(|&(_, class)| class);
        let boundary = match (previous, current) {
            (CharClass::Lower, CharClass::Upper) => true,
            (CharClass::Digit, other) | (other, CharClass::Digit) => other != CharClass::Digit,
            (CharClass::Upper, CharClass::Upper) => next == Some(CharClass::Lower),
            _ => false,
        };
        if boundary {
            out.push(base + start..base + offset);
            start = offset;
        }
        previous = current;
    }
    out.push(base + start..base + segment.len());
}

/// The stems a [`RememberedStems`] filter keeps at most; past that it starts over.
const REMEMBERED_STEMS: usize = 1 << 16;

/// English stemming as [`stemmer`] does it, remembering each word's stem: source text repeats
/// the same identifiers all through, and looking a stem up costs a fraction of computing it.
#[derive(Debug, Clone, Copy)]
pub struct RememberedStems;

impl TokenFilter for RememberedStems {
    type Tokenizer<T: Tokenizer> = RememberedStemsFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> RememberedStemsFilter<T> {
        RememberedStemsFilter {
            inner,
            stemmer: stemmer(),
            stems: foldhash::HashMap::default(),
        }
    }
}

/// The tokenizer of [`RememberedStems`]: its memory lasts as long as the tokenizer.
#[derive(Clone)]
pub struct RememberedStemsFilter<T> {
    inner: T,
    stemmer: TextAnalyzer,
    stems: foldhash::HashMap<String, String>,
}

impl<T: Tokenizer> Tokenizer for RememberedStemsFilter<T> {
    type TokenStream<'a> = RememberedStemsStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        RememberedStemsStream {
            tail: self.inner.token_stream(text),
            stemmer: &mut self.stemmer,
            stems: &mut self.stems,
        }
    }
}

/// The token stream of [`RememberedStems`].
pub struct RememberedStemsStream<'a, S> {
    tail: S,
    stemmer: &'a mut TextAnalyzer,
    stems: &'a mut foldhash::HashMap<String, String>,
}

impl<S: TokenStream> TokenStream for RememberedStemsStream<'_, S> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let text = &mut self.tail.token_mut().text;
        // The stemmer leaves a word of one or two characters as it is (a test holds that).
        if text.len() <= 2 {
            return true;
        }
        if let Some(stem) = self.stems.get(text.as_str()) {
            text.clear();
            text.push_str(stem);
            return true;
        }
        let stem = tokens(self.stemmer, text).concat();
        if self.stems.len() >= REMEMBERED_STEMS {
            self.stems.clear();
        }
        let word = std::mem::replace(text, stem.clone());
        self.stems.insert(word, stem);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyzed(text: &str) -> Vec<String> {
        tokens(&mut analyzer(), text)
    }

    fn raw(text: &str) -> Vec<String> {
        let mut tokenizer = CodeTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn unstemmed_tokens_stem_to_the_analyzers() {
        let text = "fn validatePatch(HTTPServer, max-depth, dependencies_resolved) // happy";
        let mut stemmer = stemmer();
        let stemmed: Vec<String> = tokens(&mut unstemmed_analyzer(), text)
            .iter()
            .flat_map(|token| tokens(&mut stemmer, token))
            .collect();
        assert_eq!(stemmed, tokens(&mut analyzer(), text));
    }

    /// What lets [`RememberedStems`] pass one- and two-byte tokens through unstemmed.
    #[test]
    fn the_stemmer_keeps_words_of_two_bytes() {
        let mut stemmer = stemmer();
        let alphabet = ('a'..='z').chain('0'..='9').chain(['_']).map(String::from);
        let short: Vec<String> = alphabet.clone().collect();
        let mut words: Vec<String> = short
            .iter()
            .flat_map(|a| short.iter().map(move |b| format!("{a}{b}")))
            .collect();
        words.extend(alphabet);
        words.extend(["é", "ü", "ß", "я"].map(String::from));
        for word in words {
            assert!(word.len() <= 2);
            assert_eq!(
                tokens(&mut stemmer, &word),
                std::slice::from_ref(&word),
                "{word}"
            );
        }
    }

    /// Remembered stems are the stemmer's, the first time a word is seen and after.
    #[test]
    fn remembered_stems_are_the_stemmers() {
        let text = "resolved dependencies resolve resolving; dependencies happy resolved";
        let mut plain = TextAnalyzer::builder(CodeTokenizer::default())
            .filter(LowerCaser)
            .filter(Stemmer::new(Language::English))
            .build();
        let mut remembering = analyzer();
        for _ in 0..2 {
            assert_eq!(tokens(&mut remembering, text), tokens(&mut plain, text));
        }
    }

    #[test]
    fn splits_identifiers_and_keeps_the_joined_form() {
        assert_eq!(
            raw("session_checkpoint"),
            ["session_checkpoint", "session", "checkpoint"]
        );
        assert_eq!(raw("HTTPServer"), ["HTTP_Server", "HTTP", "Server"]);
        assert_eq!(
            raw("parseJSONValue"),
            ["parse_JSON_Value", "parse", "JSON", "Value"]
        );
        assert_eq!(raw("utf8Decoder"), ["utf_8_Decoder", "utf", "8", "Decoder"]);
        assert_eq!(raw("__init__ x"), ["init", "x"]);
        assert_eq!(
            raw("--max-depth=2 a - b"),
            ["max_depth", "max", "depth", "2", "a", "b"]
        );
        assert_eq!(raw("c.d x- é"), ["c", "d", "x", "é"]);
        assert_eq!(raw("___"), Vec::<String>::new());
    }

    #[test]
    fn lowercases_and_stems() {
        assert_eq!(
            analyzed("validatePatches"),
            ["validate_patch", "valid", "patch"]
        );
        assert_eq!(
            analyzed("src/config_persistence.rs")[..2],
            ["src", "config_persist"]
        );
    }

    #[test]
    fn drops_overlong_runs_and_keeps_offsets() {
        let blob = "x".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(raw(&format!("{blob} keep")), ["keep"]);
        let mut tokenizer = CodeTokenizer::default();
        let mut stream = tokenizer.token_stream("  fooBar");
        assert!(stream.advance());
        assert_eq!(
            (stream.token().offset_from, stream.token().offset_to),
            (2, 8)
        );
        assert!(stream.advance());
        assert_eq!(
            (stream.token().offset_from, stream.token().offset_to),
            (2, 5)
        );
    }

    fn terms(query: &str) -> Vec<(String, f32)> {
        query_terms(&mut analyzer(), query)
            .into_iter()
            .map(|term| (term.text, term.weight))
            .collect()
    }

    fn plain(texts: &[&str]) -> Vec<(String, f32)> {
        texts.iter().map(|text| ((*text).to_owned(), 1.0)).collect()
    }

    #[test]
    fn query_terms_drop_stop_words_unless_nothing_is_left() {
        assert_eq!(
            terms("where are patches validated?"),
            plain(&["patch", "valid"])
        );
        assert_eq!(terms("Add a flag"), plain(&["flag"]));
        assert_eq!(terms("add"), plain(&["add"]));
        assert_eq!(terms("fix fix"), plain(&["fix"]));
        assert_eq!(
            terms("the --max-depth flag"),
            plain(&["max_depth", "max", "depth", "flag"])
        );
    }

    #[test]
    fn code_spans_are_kept_and_weigh_more() {
        assert_eq!(
            terms("add `allow(dead_code)` to the walker"),
            [
                ("walker".to_owned(), 1.0),
                ("allow".to_owned(), CODE_SPAN_WEIGHT),
                ("dead_cod".to_owned(), CODE_SPAN_WEIGHT),
                ("dead".to_owned(), CODE_SPAN_WEIGHT),
                ("code".to_owned(), CODE_SPAN_WEIGHT),
            ]
        );
        assert_eq!(
            terms("walker for `walker`"),
            [("walker".to_owned(), CODE_SPAN_WEIGHT)]
        );
    }
}
