//! Skynet: a 10-ary tree of spawns whose leaves return their own number; every inner node sums its
//! ten children. With `leaves = 10^k` it spawns `(10^(k+1) - 1) / 9 - 1` threads and the answer is
//! `leaves · (leaves - 1) / 2`. Shared by `benches/skynet.rs` and `examples/skynet.rs`.

/// The expected sum for `leaves` leaves.
pub fn expected(leaves: u64) -> u64 {
    leaves * (leaves - 1) / 2
}

/// Whether `leaves` is a power of ten (the tree needs it).
pub fn is_power_of_ten(mut leaves: u64) -> bool {
    if leaves == 0 {
        return false;
    }
    while leaves.is_multiple_of(10) {
        leaves /= 10;
    }
    leaves == 1
}

/// footprint: one `'static` green thread per node, joined through its `JoinHandle`.
pub fn footprint_spawn(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let step = size / 10;
    let mut handles = Vec::with_capacity(10);
    for i in 0..10 {
        handles.push(footprint::spawn(move || {
            footprint_spawn(num + i * step, step)
        }));
    }
    handles
        .into_iter()
        .map(|h| h.join().expect("a skynet node does not panic"))
        .sum()
}

/// rayon: one `scope` spawn per node, each writing its sum into its parent's slot.
pub fn rayon_scope(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let step = size / 10;
    let mut sums = [0u64; 10];
    rayon::scope(|s| {
        for (i, slot) in sums.iter_mut().enumerate() {
            s.spawn(move |_| *slot = rayon_scope(num + i as u64 * step, step));
        }
    });
    sums.iter().sum()
}

/// may: one coroutine per node, joined through its `JoinHandle`.
pub fn may_spawn(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let step = size / 10;
    let mut handles = Vec::with_capacity(10);
    for i in 0..10 {
        handles.push(may::go!(move || may_spawn(num + i * step, step)));
    }
    handles
        .into_iter()
        .map(|h| h.join().expect("a skynet node does not panic"))
        .sum()
}
