//! What the controller decides: a new active count ([`Decision`]) and why ([`Reason`]).

/// Why the active count is what it is.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The search starts (at `min`).
    Start,
    /// The search tries more workers: `T_step` (`half == false`) or `T_step / 2` more (on a
    /// large range at most as many as are active above `min − 1`: doubling).
    Try {
        /// Whether the smaller step was taken.
        half: bool,
    },
    /// A re-search tries `T_step` fewer workers than the best so far.
    TryFewer,
    /// The last try's throughput gain was too close to call: back to the best count, to
    /// measure it again before judging.
    Recheck,
    /// The last try found no more parallelism (CPU utilisation or throughput did not grow):
    /// back to the best (or, after a try with fewer workers, keep the fewer).
    NoMoreParallelism,
    /// The last try ran into lock contention (high and rising, or with sharply more switches
    /// or migrations): back to the best.
    LockContention,
    /// The search reached `max` and kept it.
    ReachedMax,
    /// A re-search's try with fewer workers did less: back to the count it was tried against,
    /// which is kept (it is `max`, so there is nothing above to try).
    FewerWereSlower,
    /// On a large range, after the climb stopped: try a count between the best and a
    /// measured neighbour (the best may lie between the tries).
    Refine,
    /// The search would end, but a count it measured did better than the best: measure that
    /// one again before choosing.
    Rival,
    /// The count that measured best in this search (a refinement's or a rival's), kept.
    BestMeasured,
    /// The profile moved away from the one the choice was made on: search again around the
    /// settled count (first `T_step` fewer, or more when it is `min`).
    PhaseChange,
    /// The machine is shared: capped by the sharing rule.
    Shared,
    /// The machine freed up: back to the count the search wants.
    Freed,
    /// Under the sharing cap the program did less work per second than before it (it reports
    /// progress): back to the count the search wants, and no cap until the machine is free.
    CapRefuted,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::Start => "search starts at min",
            Reason::Try { half: false } => "try T_step more",
            Reason::Try { half: true } => "try T_step/2 more",
            Reason::TryFewer => "try T_step fewer",
            Reason::Recheck => "close call: measure the best again",
            Reason::NoMoreParallelism => "no more parallelism: keep best",
            Reason::LockContention => "lock contention: keep best",
            Reason::ReachedMax => "reached max: keep it",
            Reason::FewerWereSlower => "fewer were slower: keep best",
            Reason::Refine => "try between the best and a neighbour",
            Reason::Rival => "a measured count did better: measure it again",
            Reason::BestMeasured => "best measured count: keep it",
            Reason::PhaseChange => "phase change: search around the settled count",
            Reason::Shared => "machine shared: capped",
            Reason::Freed => "machine free: cap lifted",
            Reason::CapRefuted => "cap cost throughput: lifted",
        })
    }
}

/// A change of the active worker count (or the end of a search), and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Active workers from now on.
    pub active: usize,
    /// Why.
    pub reason: Reason,
}
