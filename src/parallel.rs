//! Independent pieces of work spread over threads, the first on the calling thread.
//!
//! A fresh thread starts with cold memory: its allocator pages are faulted in on first touch,
//! which on a short piece of work costs more than the thread saves. The calling thread's memory
//! is already warm, so it takes the first piece itself. How to cut the work into pieces is the
//! caller's decision ([`map_pieces`]), or items of about even cost are cut into one contiguous
//! chunk per thread ([`map_chunks`]), or items of uneven cost are handed out one at a time to
//! whichever thread is free ([`map_balanced`]).

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

/// `work` applied to every piece, results in the pieces' order: the first piece on the calling
/// thread, each other one on a scoped thread of its own. A panic in a worker is a bug and is
/// raised again on the calling thread.
pub fn map_pieces<P: Sync, R: Send>(pieces: &[P], work: impl Fn(&P) -> R + Sync) -> Vec<R> {
    let Some((first, rest)) = pieces.split_first() else {
        return Vec::new();
    };
    let work = &work;
    std::thread::scope(|scope| {
        let others: Vec<_> = rest
            .iter()
            .map(|piece| scope.spawn(move || work(piece)))
            .collect();
        let mut results = Vec::with_capacity(pieces.len());
        results.push(work(first));
        for other in others {
            results.push(
                other
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        results
    })
}

/// `work` applied to `items` cut into one contiguous chunk per core, results in the items'
/// order. `work` takes a whole chunk, so that it can set up what every item needs (a buffer,
/// an analyzer) once per thread.
pub fn map_chunks<T: Sync, R: Send>(items: &[T], work: impl Fn(&[T]) -> Vec<R> + Sync) -> Vec<R> {
    map_chunks_on(items, cores(), work)
}

/// [`map_chunks`] on at most `threads` threads (at least one, at most one per core), for work
/// too small to pay for a thread per core.
pub fn map_chunks_on<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, cores());
    let chunks: Vec<&[T]> = items.chunks(items.len().div_ceil(threads).max(1)).collect();
    map_pieces(&chunks, |chunk| work(chunk))
        .into_iter()
        .flatten()
        .collect()
}

/// The cores this process may use (one when the system cannot tell).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// `work` applied to every item, results in the items' order, on every core (the calling
/// thread among them). Each thread takes the next item as soon as it is done with one, the
/// costliest first by `cost`, so that no thread is left with a large item while the others
/// have nothing to do.
pub fn map_balanced<T: Sync, R: Send>(
    items: &[T],
    cost: impl Fn(&T) -> u64,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&at| std::cmp::Reverse(cost(&items[at])));
    let threads = cores().min(items.len());
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = map_pieces(&vec![(); threads], |()| {
        let mut done = Vec::new();
        while let Some(&at) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((at, work(&items[at])));
        }
        done
    })
    .into_iter()
    .flatten()
    .collect();
    done.sort_unstable_by_key(|&(at, _)| at);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_pieces_order_and_the_first_runs_here() {
        let here = std::thread::current().id();
        let pieces: Vec<u32> = (0..5).collect();
        let results = map_pieces(&pieces, |n| (n * 10, std::thread::current().id() == here));
        let values: Vec<u32> = results.iter().map(|(value, _)| *value).collect();
        assert_eq!(values, [0, 10, 20, 30, 40]);
        let on_this_thread: Vec<bool> = results.iter().map(|(_, here)| *here).collect();
        assert_eq!(on_this_thread, [true, false, false, false, false]);
        assert!(map_pieces(&[] as &[u32], |n| *n).is_empty());
    }

    #[test]
    fn chunks_are_contiguous_and_results_keep_the_items_order() {
        let items: Vec<u32> = (0..10).collect();
        let doubled = map_chunks(&items, |chunk| chunk.iter().map(|n| n * 2).collect());
        assert_eq!(doubled, (0..10).map(|n| n * 2).collect::<Vec<_>>());
        // One call per chunk, each chunk a run of the items.
        let chunks = map_chunks(&items, |chunk| vec![chunk.to_vec()]);
        assert!(chunks.len() <= cores());
        assert_eq!(chunks.concat(), items);
        assert_eq!(map_chunks_on(&items, 1, |chunk| vec![chunk.len()]), [10]);
        assert_eq!(map_chunks_on(&items, 0, |chunk| vec![chunk.len()]), [10]);
        assert!(map_chunks(&[] as &[u32], |chunk| chunk.to_vec()).is_empty());
    }

    #[test]
    fn balanced_results_keep_the_items_order() {
        let items: Vec<u64> = vec![3, 50, 1, 7, 20];
        assert_eq!(map_balanced(&items, |n| *n, |n| n * 2), [6, 100, 2, 14, 40]);
        assert!(map_balanced(&[] as &[u64], |n| *n, |n| *n).is_empty());
    }

    #[test]
    #[should_panic(expected = "piece 2")]
    fn a_worker_panic_reaches_the_caller() {
        map_pieces(&[1, 2], |n| {
            if *n == 2 {
                panic!("piece {n}");
            }
        });
    }
}
