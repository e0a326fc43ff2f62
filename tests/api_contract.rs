//! The public API contract of DESIGN.md, compiled and run as written.
//!
//! If this file stops compiling, the facade broke its contract: fix the facade, not this test.
//! (The `footprint::sync` lines join once the facade exports `sync`.)

#[test]
fn design_md_contract_snippet_compiles_and_runs() -> Result<(), footprint::Error> {
    let rt = footprint::Runtime::builder()
        .workers(4) // unset: one per core of the allowed CPU set; 0 is an error
        .stack_size(8 << 20) // bytes per green thread (guard page included or not: document it)
        .build()?; // Result<Runtime, footprint::Error>
    let v = rt.block_on(|| {
        // runs on a green thread, returns its value
        let h = footprint::spawn(|| 1 + 1); // JoinHandle<T>
        let (a, b) = footprint::join(|| 2, || 3);
        let r = footprint::scope(|s| s.spawn(|| a + b).join().unwrap()); // borrows allowed
        footprint::yield_now();
        h.join().unwrap() + r
    });
    assert_eq!(v, 7);
    Ok(())
}

#[test]
fn nonsense_configurations_are_typed_errors_that_say_what_to_do() {
    let zero = footprint::Runtime::builder().workers(0).build();
    match zero {
        Err(footprint::Error::ZeroWorkers) => {}
        Err(other) => panic!("workers(0) gave the wrong error: {other}"),
        Ok(_) => panic!("workers(0) must be rejected"),
    }
    let message = footprint::Runtime::builder()
        .workers(0)
        .build()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("workers("),
        "the message should say which setting to change: {message}"
    );

    let outside = footprint::Runtime::builder().cpus(&[100_000]).build();
    assert!(
        matches!(
            outside,
            Err(footprint::Error::CpuNotAllowed { cpu: 100_000, .. })
        ),
        "a CPU outside the process mask must be rejected"
    );

    let tiny = footprint::Runtime::builder().stack_size(16).build();
    assert!(
        matches!(
            tiny,
            Err(footprint::Error::StackTooSmall { requested: 16, .. })
        ),
        "a 16-byte stack must be rejected"
    );
}

#[test]
fn block_on_closure_may_borrow_from_the_caller() {
    let rt = footprint::Runtime::builder()
        .workers(2)
        .build()
        .expect("2 workers is a valid configuration");
    let mut local = vec![1u64, 2, 3];
    rt.block_on(|| local.push(4));
    let sum = rt.block_on(|| local.iter().sum::<u64>());
    assert_eq!(sum, 10);
}

#[test]
fn a_panic_in_a_spawned_thread_reaches_its_joiner_and_the_runtime_keeps_running() {
    let rt = footprint::Runtime::builder()
        .workers(2)
        .build()
        .expect("2 workers is a valid configuration");
    let result = rt.block_on(|| footprint::spawn(|| -> u32 { panic!("boom") }).join());
    let payload = result.expect_err("the panic must reach join() as Err");
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("");
    assert_eq!(text, "boom");
    // The workers survived.
    assert_eq!(rt.block_on(|| footprint::join(|| 20, || 22)), (20, 22));
}
