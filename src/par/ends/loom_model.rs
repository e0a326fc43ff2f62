//! Loom model of the two-ended chunk lists: a worker taking from the front and thieves taking
//! from the back take every place exactly once, under every interleaving and weak-memory outcome
//! loom explores. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc --release --target-dir target/loom --lib par::ends`
//! (under `--cfg loom` the facade builds without its `sync` re-exports, which the locks crate
//! swaps for loom's types).

use super::Ends;
use loom::sync::Arc;
use loom::thread;

/// Takes from the back until the list is empty (looking again after a lost race).
fn steal_all(e: &Ends) -> Vec<u32> {
    let mut got = Vec::new();
    loop {
        let seen = e.seen();
        if seen.left() == 0 {
            return got;
        }
        if let Some(at) = e.take_back(seen) {
            got.push(at);
        }
    }
}

#[test]
fn owner_and_a_thief_take_each_place_once() {
    loom::model(|| {
        let e = Arc::new(Ends::new(5, 8));
        let thief = {
            let e = e.clone();
            thread::spawn(move || steal_all(&e))
        };
        let mut all = Vec::new();
        while let Some(at) = e.take_front() {
            all.push(at);
        }
        all.extend(thief.join().unwrap());
        all.sort_unstable();
        assert_eq!(all, [5, 6, 7]);
    });
}

#[test]
fn two_thieves_take_each_place_once() {
    loom::model(|| {
        let e = Arc::new(Ends::new(0, 2));
        let other = {
            let e = e.clone();
            thread::spawn(move || steal_all(&e))
        };
        let mut all = steal_all(&e);
        all.extend(other.join().unwrap());
        all.sort_unstable();
        assert_eq!(all, [0, 1]);
    });
}

#[test]
fn an_owner_front_take_and_a_theft_of_the_last_place_do_not_both_win() {
    loom::model(|| {
        let e = Arc::new(Ends::new(0, 1));
        let thief = {
            let e = e.clone();
            thread::spawn(move || steal_all(&e))
        };
        let mine = e.take_front();
        let stolen = thief.join().unwrap();
        assert_eq!(usize::from(mine.is_some()) + stolen.len(), 1);
    });
}
