//! The `select!` macro: crossbeam-channel's syntax over [`Select`](super::Select).

/// Waits on several channel operations and runs the arm of the one that proceeds
/// (crossbeam-channel's `select!`).
///
/// Arms: `recv(r) -> res => body` (`res`: `Result<T, RecvError>`), `send(s, msg) -> res => body`
/// (`res`: `Result<(), SendError<T>>`; `msg` is evaluated only when the send is selected), and
/// at most one of `default => body` (or `default() => body`: taken when no operation can
/// proceed at once) or
/// `default(timeout) => body` (taken when none could proceed within `timeout`). When several
/// operations can proceed, one is chosen at random; a disconnected channel's operations can
/// always proceed (with an error). A blocked `select!` parks the green thread once; the first
/// channel to become ready wakes it.
///
/// ```
/// use footprint_locks::channel::{self, select};
/// use std::time::Duration;
/// let (tx1, rx1) = channel::unbounded();
/// let (tx2, rx2) = channel::bounded(1);
/// tx1.send(10).unwrap();
/// let mut got = Vec::new();
/// // Both arms can proceed at first, in either order; each can only once (one message in
/// // rx1, one place in tx2's channel).
/// for _ in 0..2 {
///     select! {
///         recv(rx1) -> msg => got.push(msg.unwrap()),
///         send(tx2, 20) -> res => res.unwrap(),
///         default(Duration::from_secs(1)) => panic!("one operation can proceed"),
///     }
/// }
/// got.push(rx2.recv().unwrap());
/// assert_eq!(got, [10, 20]);
/// ```
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__select_internal!(@parse [] () $($tokens)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_internal {
    // Arms, one at a time. Each gets its own `__chan`/`__idx` names (macro hygiene makes the
    // names of each step distinct); bodies are kept as one braced token tree.
    (@parse [$($arms:tt)*] ($($def:tt)*) recv($r:expr) -> $res:pat => $body:block , $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)* (recv __chan __idx ($r) () $res => $body)] ($($def)*) $($rest)*)
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) recv($r:expr) -> $res:pat => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)* (recv __chan __idx ($r) () $res => $body)] ($($def)*) $($rest)*)
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) recv($r:expr) -> $res:pat => $body:expr , $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)* (recv __chan __idx ($r) () $res => { $body })] ($($def)*) $($rest)*)
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) recv($r:expr) -> $res:pat => $body:expr) => {
        $crate::__select_internal!(@parse [$($arms)* (recv __chan __idx ($r) () $res => { $body })] ($($def)*))
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) send($s:expr, $m:expr) -> $res:pat => $body:block , $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)* (send __chan __idx ($s) ($m) $res => $body)] ($($def)*) $($rest)*)
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) send($s:expr, $m:expr) -> $res:pat => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)* (send __chan __idx ($s) ($m) $res => $body)] ($($def)*) $($rest)*)
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) send($s:expr, $m:expr) -> $res:pat => $body:expr , $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)* (send __chan __idx ($s) ($m) $res => { $body })] ($($def)*) $($rest)*)
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) send($s:expr, $m:expr) -> $res:pat => $body:expr) => {
        $crate::__select_internal!(@parse [$($arms)* (send __chan __idx ($s) ($m) $res => { $body })] ($($def)*))
    };
    // `default()` is `default` (crossbeam accepts both).
    (@parse [$($arms:tt)*] () default() => $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)*] () default => $($rest)*)
    };
    (@parse [$($arms:tt)*] () default => $body:block , $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)*] (now $body) $($rest)*)
    };
    (@parse [$($arms:tt)*] () default => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)*] (now $body) $($rest)*)
    };
    (@parse [$($arms:tt)*] () default => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_internal!(@parse [$($arms)*] (now { $body }) $($($rest)*)?)
    };
    (@parse [$($arms:tt)*] () default($t:expr) => $body:block , $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)*] (within ($t) $body) $($rest)*)
    };
    (@parse [$($arms:tt)*] () default($t:expr) => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($arms)*] (within ($t) $body) $($rest)*)
    };
    (@parse [$($arms:tt)*] () default($t:expr) => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_internal!(@parse [$($arms)*] (within ($t) { $body }) $($($rest)*)?)
    };
    (@parse [$($arms:tt)*] ($($def:tt)+) default $($rest:tt)*) => {
        ::core::compile_error!("select! takes at most one `default` arm")
    };
    (@parse [$($arms:tt)*] ($($def:tt)*)) => {
        $crate::__select_internal!(@emit __sel __oper [$($arms)*] ($($def)*))
    };
    (@parse [$($arms:tt)*] ($($def:tt)*) $($rest:tt)+) => {
        ::core::compile_error!(
            "select!: expected `recv(r) -> res => body`, `send(s, msg) -> res => body`, \
             `default => body` or `default(timeout) => body`"
        )
    };

    // Registers every operation, then selects (waiting, trying, or waiting with a timeout).
    (@emit $sel:ident $oper:ident
        [$( ($kind:ident $chan:ident $idx:ident ($e:expr) ($($m:expr)?) $res:pat => $body:tt) )*]
        ($($def:tt)*)
    ) => {{
        $( let $chan = &$e; )*
        let mut $sel = $crate::channel::Select::new();
        $( let $idx = $sel.$kind($chan); )*
        $crate::__select_internal!(@run $sel $oper
            [$( ($kind $chan $idx ($($m)?) $res => $body) )*] ($($def)*))
    }};
    (@run $sel:ident $oper:ident [$($arms:tt)*] ()) => {{
        let $oper = $sel.select();
        $crate::__select_internal!(@dispatch $oper [$($arms)*])
    }};
    (@run $sel:ident $oper:ident [$($arms:tt)*] (now $body:tt)) => {
        match $sel.try_select() {
            ::core::result::Result::Ok($oper) => $crate::__select_internal!(@dispatch $oper [$($arms)*]),
            ::core::result::Result::Err(_) => $body,
        }
    };
    (@run $sel:ident $oper:ident [$($arms:tt)*] (within ($t:expr) $body:tt)) => {
        match $sel.select_timeout($t) {
            ::core::result::Result::Ok($oper) => $crate::__select_internal!(@dispatch $oper [$($arms)*]),
            ::core::result::Result::Err(_) => $body,
        }
    };
    (@dispatch $oper:ident [$( ($kind:ident $chan:ident $idx:ident ($($m:expr)?) $res:pat => $body:tt) )*]) => {{
        let __index = $oper.index();
        $(
            if __index == $idx {
                $crate::__select_internal!(@complete $oper $kind $chan ($($m)?) $res => $body)
            } else
        )*
        {
            ::core::unreachable!("select! chose an operation it did not add")
        }
    }};
    (@complete $oper:ident recv $chan:ident () $res:pat => $body:tt) => {{
        #[allow(clippy::let_unit_value)]
        let $res = $oper.recv($chan);
        $body
    }};
    (@complete $oper:ident send $chan:ident ($m:expr) $res:pat => $body:tt) => {{
        let $res = $oper.send($chan, $m);
        $body
    }};
}
