//! One page of the state: every list of it cut to the same window, for readers that cannot
//! take a large state whole (`show --limit`; MCP hosts cap what a tool may return). Everything
//! that is not a list comes whole on every page. Pure: it only cuts what it is given.

use serde::Serialize;

use crate::state::fields::for_each_collection;
use crate::state::model::State;

/// Where a page is in the state's lists, and where the next one starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Page {
    /// The first item of each list on this page (0-based).
    pub offset: usize,
    /// The most items of each list on one page.
    pub limit: usize,
    /// The offset of the next page, or `null` on the last one.
    pub next_offset: Option<usize>,
    /// The length of the longest list, whole.
    pub longest_list: usize,
}

/// Keeps items `offset..offset + limit` of `list`; answers its whole length.
fn cut<T>(list: &mut Vec<T>, offset: usize, limit: usize) -> usize {
    let whole = list.len();
    list.truncate(offset.saturating_add(limit));
    list.drain(..offset.min(list.len()));
    whole
}

// Cuts every keyed collection, derived from the one collection list.
macro_rules! cut_collections {
    ($(
        $variant:ident $name:ident($record:ty, $by:ty) in $field:ident at $($path:ident).+,
        $upsert_doc:literal, $remove_doc:literal;
    )*) => {
        /// Cuts every keyed collection of `state`; answers the longest one's whole length.
        fn cut_collections(state: &mut State, offset: usize, limit: usize) -> usize {
            let mut longest = 0;
            $(longest = longest.max(cut(&mut state.$($path).+, offset, limit));)*
            longest
        }
    };
}
for_each_collection!(cut_collections);

/// Cuts every list of `state` to items `offset..offset + limit` (`limit` at least 1).
pub fn page(state: &mut State, offset: usize, limit: usize) -> Page {
    let limit = limit.max(1);
    let longest = [
        cut_collections(state, offset, limit),
        cut(&mut state.job_bindings, offset, limit),
        cut(&mut state.acceptance_receipts, offset, limit),
        cut(&mut state.runtime_links, offset, limit),
        cut(&mut state.observations, offset, limit),
        cut(&mut state.recent_evidence, offset, limit),
        cut(&mut state.conflicts, offset, limit),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let next = offset.saturating_add(limit);
    Page {
        offset,
        limit,
        next_offset: (next < longest).then_some(next),
        longest_list: longest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::fixtures::node;

    #[test]
    fn every_list_is_cut_to_the_same_window_until_the_longest_ends() {
        let mut state = State {
            objective: Some("o".into()),
            ..State::default()
        };
        state.graphs.architecture.nodes = (0..5).map(|n| node(&format!("n{n}"), &[])).collect();
        state.graphs.dataflow.nodes = vec![node("d", &[])];
        let mut first = state.clone();
        let page_one = page(&mut first, 0, 2);
        let ids = |state: &State| -> Vec<String> {
            state
                .graphs
                .architecture
                .nodes
                .iter()
                .map(|n| n.id.clone())
                .collect()
        };
        assert_eq!(ids(&first), ["n0", "n1"]);
        assert_eq!(first.graphs.dataflow.nodes.len(), 1);
        assert_eq!(first.objective.as_deref(), Some("o"));
        assert_eq!(
            page_one,
            Page {
                offset: 0,
                limit: 2,
                next_offset: Some(2),
                longest_list: 5
            }
        );
        let mut last = state.clone();
        let page_three = page(&mut last, 4, 2);
        assert_eq!(ids(&last), ["n4"]);
        assert!(last.graphs.dataflow.nodes.is_empty());
        assert_eq!(page_three.next_offset, None);
        let mut past = state;
        assert_eq!(page(&mut past, 9, 2).next_offset, None);
        assert!(ids(&past).is_empty());
    }
}
