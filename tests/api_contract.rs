//! The public API contract of DESIGN.md, compiled and run as written.
//!
//! If this file stops compiling, the facade broke its contract: fix the facade, not this test.

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
    let m = footprint::sync::Mutex::new(0u64); // default algorithm; others by type
    *m.lock() += 1; // guard derefs to the data
    let n = 1;
    let b = footprint::sync::Barrier::new(n); // b.wait()
    let c = footprint::sync::Condvar::new();
    assert_eq!(v, 7);
    assert_eq!(*m.lock(), 1);
    assert!(
        b.wait().is_leader(),
        "a 1-thread barrier's only waiter leads"
    );
    // Nobody waits on the condvar: notifying it wakes no one.
    assert!(!c.notify_one());
    Ok(())
}

#[test]
fn sync_primitives_work_between_green_threads() {
    // The contract's Condvar: a green thread waits for a flag that another sets.
    let rt = footprint::Runtime::builder()
        .workers(1)
        .build()
        .expect("1 worker is a valid configuration");
    let ready = footprint::sync::Mutex::new(false);
    let cond = footprint::sync::Condvar::new();
    rt.block_on(|| {
        footprint::scope(|s| {
            s.spawn(|| {
                let mut flag = ready.lock();
                while !*flag {
                    cond.wait(&mut flag);
                }
            });
            s.spawn(|| {
                *ready.lock() = true;
                cond.notify_all();
            });
        })
    });
    assert!(*ready.lock());
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
    assert_eq!(panic_text(&*payload), "boom");
    // The workers survived.
    assert_eq!(rt.block_on(|| footprint::join(|| 20, || 22)), (20, 22));
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("")
}

#[test]
fn panics_in_join_and_scope_reach_the_caller_like_rayon() {
    let rt = footprint::Runtime::builder()
        .workers(2)
        .build()
        .expect("2 workers is a valid configuration");
    let from_join = rt.block_on(|| {
        std::panic::catch_unwind(|| footprint::join(|| 1, || -> u32 { panic!("right half") }))
    });
    let payload = from_join.expect_err("join must re-raise the panic of its second half");
    assert_eq!(panic_text(&*payload), "right half");

    let from_scope = rt.block_on(|| {
        std::panic::catch_unwind(|| {
            footprint::scope(|s| {
                s.spawn(|| panic!("scoped thread"));
            })
        })
    });
    let payload = from_scope.expect_err("scope must re-raise an unjoined scoped thread's panic");
    assert_eq!(panic_text(&*payload), "scoped thread");

    // The workers survived both.
    assert_eq!(rt.block_on(|| footprint::join(|| 1, || 2)), (1, 2));
}
