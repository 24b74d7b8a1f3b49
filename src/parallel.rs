//! Independent pieces of work spread over threads, the first on the calling thread.
//!
//! A fresh thread starts with cold memory: its allocator pages are faulted in on first touch,
//! which on a short piece of work costs more than the thread saves. The calling thread's memory
//! is already warm, so it takes the first piece itself. How to cut the work into pieces is the
//! caller's decision; this module only runs them.

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
    #[should_panic(expected = "piece 2")]
    fn a_worker_panic_reaches_the_caller() {
        map_pieces(&[1, 2], |n| {
            if *n == 2 {
                panic!("piece {n}");
            }
        });
    }
}
