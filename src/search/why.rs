//! Why a hit matched, and its relevance (docs/retrieval.md#why-a-hit-matched): which of the
//! query's words its lines, its path and the definition it holds contain, and the weighted
//! share of the query's words it matches, a number in [0, 1] that means the same in every
//! query. Pure: the terms found come in, the explanation goes out.

use std::collections::HashSet;

use serde::Serialize;

use crate::search::tokenize::QueryWord;

/// Why a hit matched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Why {
    /// The query's words found in the hit's lines (for a chunk, anywhere in the chunk it
    /// scored; for a state record, its text), as the query spells them.
    pub terms: Vec<String>,
    /// The query's words found in the hit's path.
    pub path: Vec<String>,
    /// The definition of an identifier the query names that the hit holds: a definition
    /// hit's, and any hit's when the query is an identifier lookup (one word, a code span, or
    /// two words one of which is spelled as code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<Defined>,
}

/// A definition a hit holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Defined {
    /// The name as the code spells it.
    pub name: String,
    /// Its line (1-based).
    pub line: u32,
}

/// What a hit was found to contain: the analyzed terms of its lines and of its path, and the
/// definition it holds with that name's analyzed terms.
#[derive(Debug, Default)]
pub struct Found<'a> {
    /// Terms of the hit's lines.
    pub lines: HashSet<&'a str>,
    /// Terms of the hit's path.
    pub path: HashSet<&'a str>,
    /// The definition, and the terms of its name.
    pub definition: Option<(Defined, Vec<String>)>,
}

/// Why a hit that contains `found` matches `words`, and its relevance: the share of the
/// words' weight it matches, where a word counts by the share of its terms found anywhere
/// (lines, path or the definition's name): `validatePatch` against lines that say only
/// `patch` counts a third (one of its terms `validatepatch`, `valid`, `patch`). Every word
/// found whole gives 1; nothing found gives 0.
pub fn explain(words: &[QueryWord], found: &Found<'_>) -> (Why, f32) {
    let defined: HashSet<&str> = found
        .definition
        .iter()
        .flat_map(|(_, terms)| terms.iter().map(String::as_str))
        .collect();
    let mut why = Why {
        definition: found
            .definition
            .as_ref()
            .map(|(defined, _)| defined.clone()),
        ..Why::default()
    };
    let (mut matched, mut total) = (0.0, 0.0);
    for word in words {
        let share = |terms: &HashSet<&str>| {
            let hits = word
                .terms
                .iter()
                .filter(|term| terms.contains(term.as_str()));
            hits.count() as f32 / word.terms.len() as f32
        };
        let (in_lines, in_path) = (share(&found.lines), share(&found.path));
        if in_lines > 0.0 {
            why.terms.push(word.word.clone());
        }
        if in_path > 0.0 {
            why.path.push(word.word.clone());
        }
        let anywhere = word.terms.iter().filter(|term| {
            let term = term.as_str();
            found.lines.contains(term) || found.path.contains(term) || defined.contains(term)
        });
        matched += word.weight * anywhere.count() as f32 / word.terms.len() as f32;
        total += word.weight;
    }
    let relevance = if total > 0.0 { matched / total } else { 0.0 };
    (why, relevance.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::tokenize;

    fn words(query: &str) -> Vec<QueryWord> {
        tokenize::query_words(&mut tokenize::analyzer(), query)
    }

    fn terms(text: &str) -> Vec<String> {
        tokenize::tokens(&mut tokenize::analyzer(), text)
    }

    #[test]
    fn every_word_found_is_one_none_is_zero() {
        let words = words("where are patches validated");
        let lines = terms("fn validate(patch: &Patch) {}");
        let found = Found {
            lines: lines.iter().map(String::as_str).collect(),
            ..Found::default()
        };
        let (why, relevance) = explain(&words, &found);
        assert_eq!(why.terms, ["patches", "validated"]);
        assert!(why.path.is_empty());
        assert_eq!(relevance, 1.0);
        assert_eq!(explain(&words, &Found::default()).1, 0.0);
    }

    #[test]
    fn words_count_by_their_weight_and_the_share_of_their_terms_found() {
        let words = words("walker `validatePatch`");
        let path = terms("src/walker.rs");
        let lines = terms("let patch = 1;");
        let found = Found {
            lines: lines.iter().map(String::as_str).collect(),
            path: path.iter().map(String::as_str).collect(),
            definition: None,
        };
        let (why, relevance) = explain(&words, &found);
        assert_eq!(
            (why.terms, why.path),
            (vec!["validatePatch".to_owned()], vec!["walker".to_owned()])
        );
        // walker whole (weight 1), one of validatePatch's three terms (weight 2).
        assert!(
            (relevance - (1.0 + 2.0 / 3.0) / 3.0).abs() < 1e-6,
            "{relevance}"
        );
    }

    #[test]
    fn a_definition_name_counts_and_is_named() {
        let words = words("SocketAddr");
        let defined = Defined {
            name: "SocketAddr".to_owned(),
            line: 7,
        };
        let found = Found {
            definition: Some((defined.clone(), terms("SocketAddr"))),
            ..Found::default()
        };
        let (why, relevance) = explain(&words, &found);
        assert_eq!(why.definition, Some(defined));
        assert_eq!(relevance, 1.0);
    }
}
