//! Where parallel iterators go: [`FromParallelIterator`] (`collect`) and [`ParallelExtend`]
//! (`par_extend`) for `Vec`, `String`, `HashMap`, `HashSet`, `BTreeMap` and `BTreeSet`.
//!
//! Each stretch gathers its items into the collection on its own; the stretches' collections
//! are then joined in item order, so a later item wins where the sequential `collect` lets it
//! (a repeated key of a map keeps its last value).

use super::sources::IntoParallelIterator;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

/// Collections a parallel iterator can be gathered into, in order (`collect`).
///
/// ```
/// use footprint::par::prelude::*;
/// use std::collections::HashMap;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let (squares, text): (HashMap<u32, u32>, String) = rt.block_on(|| {
///     let squares = (0..100u32).into_par_iter().map(|i| (i, i * i)).collect();
///     let text = ["a", "b", "c"].par_iter().copied().collect();
///     (squares, text)
/// });
/// assert_eq!(squares[&9], 81);
/// assert_eq!(text, "abc");
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait FromParallelIterator<T> {
    /// Gathers the items of `iter`.
    fn from_par_iter<I>(iter: I) -> Self
    where
        I: IntoParallelIterator<Item = T>;
}

/// Collections a parallel iterator's items can be appended to, in order (`par_extend`).
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let mut v = vec![0u64];
/// rt.block_on(|| v.par_extend((1..5u64).into_par_iter().map(|i| i * 10)));
/// assert_eq!(v, [0, 10, 20, 30, 40]);
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait ParallelExtend<T> {
    /// Appends the items of `iter`.
    fn par_extend<I>(&mut self, iter: I)
    where
        I: IntoParallelIterator<Item = T>;
}

impl<T: Send> FromParallelIterator<T> for Vec<T> {
    #[track_caller]
    fn from_par_iter<I>(iter: I) -> Vec<T>
    where
        I: IntoParallelIterator<Item = T>,
    {
        iter.into_par_iter().collect_vec()
    }
}

impl<T: Send> ParallelExtend<T> for Vec<T> {
    #[track_caller]
    fn par_extend<I>(&mut self, iter: I)
    where
        I: IntoParallelIterator<Item = T>,
    {
        let mut more = iter.into_par_iter().collect_vec();
        self.append(&mut more);
    }
}

/// `collect` and `par_extend` for a collection that is `Default + Extend` and is joined by
/// extending the earlier stretch's collection with the later one's.
macro_rules! by_extending {
    ($(impl[$($g:tt)*] $coll:ty : $item:ty;)*) => {$(
        impl<$($g)*> FromParallelIterator<$item> for $coll {
            #[track_caller]
            fn from_par_iter<I>(iter: I) -> Self
            where
                I: IntoParallelIterator<Item = $item>,
            {
                iter.into_par_iter()
                    .fold_stretches(
                        |it| it.collect::<Self>(),
                        |mut a, b| {
                            a.extend(b);
                            a
                        },
                    )
                    .unwrap_or_default()
            }
        }

        impl<$($g)*> ParallelExtend<$item> for $coll {
            #[track_caller]
            fn par_extend<I>(&mut self, iter: I)
            where
                I: IntoParallelIterator<Item = $item>,
            {
                self.extend(<Self as FromParallelIterator<$item>>::from_par_iter(iter));
            }
        }
    )*};
}

by_extending! {
    impl[K: Eq + Hash + Send, V: Send, S: BuildHasher + Default + Send] HashMap<K, V, S>: (K, V);
    impl[T: Eq + Hash + Send, S: BuildHasher + Default + Send] HashSet<T, S>: T;
    impl[K: Ord + Send, V: Send] BTreeMap<K, V>: (K, V);
    impl[T: Ord + Send] BTreeSet<T>: T;
}

/// `collect` and `par_extend` into a `String` from items `String::push_str`/`push` takes.
macro_rules! into_string {
    ($(impl[$($g:tt)*] $item:ty;)*) => {$(
        impl<$($g)*> FromParallelIterator<$item> for String {
            #[track_caller]
            fn from_par_iter<I>(iter: I) -> String
            where
                I: IntoParallelIterator<Item = $item>,
            {
                iter.into_par_iter()
                    .fold_stretches(
                        |it| it.collect::<String>(),
                        |mut a, b| {
                            a.push_str(&b);
                            a
                        },
                    )
                    .unwrap_or_default()
            }
        }

        impl<$($g)*> ParallelExtend<$item> for String {
            #[track_caller]
            fn par_extend<I>(&mut self, iter: I)
            where
                I: IntoParallelIterator<Item = $item>,
            {
                self.push_str(&<String as FromParallelIterator<$item>>::from_par_iter(iter));
            }
        }
    )*};
}

into_string! {
    impl[] char;
    impl['a] &'a char;
    impl['a] &'a str;
    impl[] String;
    impl['a] std::borrow::Cow<'a, str>;
}
