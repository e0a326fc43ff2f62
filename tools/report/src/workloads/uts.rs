//! A UTS-like unbalanced tree (after the Unbalanced Tree Search benchmark's geometric trees): every
//! node derives its children's seeds from its own by a hash, and has between 0 and `2·branching`
//! children (uniform, mean `branching`; at least `branching` in the first [`BUSHY_LEVELS`]) down
//! to `depth`. The tree is fixed by its parameters but
//! unbalanced, so a scheduler cannot know the work in advance; each node does a little hashing
//! (UTS hashes with SHA-1), and the answer is the node count (checked against [`sequential`]).

use std::hint::black_box;

/// The tree's parameters.
#[derive(Clone, Copy, Debug)]
pub struct Tree {
    /// Mean children per node.
    pub branching: u64,
    /// Depth below which nodes have no children.
    pub depth: u32,
}

/// The root's seed.
pub const ROOT: u64 = 0x5EED_0F7E_E000_0001;

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Levels whose nodes have at least `branching` children, so that the tree cannot die out near
/// the root (below them a node may have none).
pub const BUSHY_LEVELS: u32 = 2;

/// A node's work (16 rounds of hashing) and its number of children.
fn node(tree: Tree, seed: u64, level: u32) -> u64 {
    let mut h = seed;
    for _ in 0..16 {
        h = mix(black_box(h));
    }
    if level >= tree.depth {
        0
    } else if level < BUSHY_LEVELS {
        (h % (2 * tree.branching + 1)).max(tree.branching)
    } else {
        h % (2 * tree.branching + 1)
    }
}

/// The seed of child `i` of the node with `seed`.
fn child(seed: u64, i: u64) -> u64 {
    mix(seed ^ (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Node count by plain recursion (the oracle).
pub fn sequential(tree: Tree, seed: u64, level: u32) -> u64 {
    let n = node(tree, seed, level);
    1 + (0..n)
        .map(|i| sequential(tree, child(seed, i), level + 1))
        .sum::<u64>()
}

/// One green thread per child, joined (call inside `Runtime::block_on`).
pub fn footprint(tree: Tree, seed: u64, level: u32) -> u64 {
    let n = node(tree, seed, level);
    let handles: Vec<_> = (0..n)
        .map(|i| footprint::spawn(move || footprint(tree, child(seed, i), level + 1)))
        .collect();
    1 + handles
        .into_iter()
        .map(|h| h.join().expect("a tree node does not panic"))
        .sum::<u64>()
}

/// One rayon scope spawn per child (call inside `ThreadPool::install`).
pub fn rayon(tree: Tree, seed: u64, level: u32) -> u64 {
    let n = node(tree, seed, level);
    let mut counts = vec![0u64; n as usize];
    rayon::scope(|s| {
        for (i, slot) in counts.iter_mut().enumerate() {
            s.spawn(move |_| *slot = rayon(tree, child(seed, i as u64), level + 1));
        }
    });
    1 + counts.iter().sum::<u64>()
}

/// One `may` coroutine per child, joined (call from a coroutine).
pub fn may(tree: Tree, seed: u64, level: u32) -> u64 {
    let n = node(tree, seed, level);
    let handles: Vec<_> = (0..n)
        .map(|i| may::go!(move || may(tree, child(seed, i), level + 1)))
        .collect();
    1 + handles
        .into_iter()
        .map(|h| h.join().expect("a tree node does not panic"))
        .sum::<u64>()
}
