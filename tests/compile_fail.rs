//! The Send/Sync contract, checked at compile time (trybuild): each file in tests/compile_fail/
//! must fail to compile with the error in its `.stderr` beside it.
//! Regenerate the expected messages after a toolchain change with `TRYBUILD=overwrite`.

#[test]
fn send_sync_contract() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
