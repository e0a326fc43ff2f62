//! The adaptive controller's `tracing` events (feature `tracing`): one per decision, with the
//! decision's fields, in the order of `RuntimeStats::adaptive`'s decisions. A collecting
//! subscriber, installed globally (the controller runs on its own thread). A watchdog on it.
#![cfg(feature = "tracing")]

mod common;
use common::with_watchdog;
use footprint_runtime::{progress, Runtime};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event's fields, by name, as text.
type Fields = BTreeMap<String, String>;

/// Keeps the fields of every event with target `footprint::adaptive`.
struct Collect(Arc<Mutex<Vec<Fields>>>);

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if event.metadata().target() != "footprint::adaptive" {
            return;
        }
        let mut fields = Fields::new();
        event.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().push(fields);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn every_decision_is_an_event_with_its_fields() {
    let events = Arc::new(Mutex::new(Vec::new()));
    tracing::subscriber::set_global_default(Collect(events.clone())).expect("first subscriber");
    with_watchdog(120, "adaptive tracing", move || {
        let max = footprint_affinity::allowed_cpus()
            .map_or(1, |c| c.len().max(1))
            .min(2);
        let rt = Runtime::builder()
            .adaptive_workers(1..=max)
            .pin(false)
            .build()
            .unwrap();
        // Busy until the search has ended (at least the start and the search's end).
        while !rt.stats().adaptive.unwrap().settled {
            rt.block_on(|| {
                let mut x = 1u64;
                for i in 0..200_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                }
                progress(1);
                x
            });
        }
        // Each decision is logged, then its event emitted: wait for the events of those logged.
        let logged = rt.stats().adaptive.unwrap().decisions;
        while events.lock().unwrap().len() < logged.len() {
            std::thread::yield_now();
        }
        drop(rt);
        let seen = events.lock().unwrap().clone();
        for (d, e) in logged.iter().zip(&seen) {
            assert_eq!(e["to"], d.active.to_string(), "{e:?} vs {d:?}");
            assert_eq!(
                e["reason_kind"],
                format!("{:?}", d.reason),
                "{e:?} vs {d:?}"
            );
            assert_eq!(e["reason"], d.reason.to_string());
        }
        assert!(seen.len() >= 2, "start and the search's end: {seen:?}");
        let first = &seen[0];
        assert_eq!(first["from"], "0");
        assert_eq!(first["to"], "1");
        assert_eq!(first["reason_kind"], "Start");
        assert_eq!(first["reason"], "search starts at min");
        assert!(
            !first.contains_key("cpu"),
            "no interval behind the first decision"
        );
        let mut from = 1;
        for e in &seen[1..] {
            assert_eq!(e["from"], from.to_string(), "{e:?}");
            from = e["to"].parse().unwrap();
            assert!((1..=max).contains(&from), "{e:?}");
            let cpu: f64 = e["cpu"].parse().unwrap();
            assert!(cpu >= 0.0, "{e:?}");
            assert!(e.contains_key("throughput"), "progress was reported: {e:?}");
        }
        let last = &seen[logged.len() - 1];
        assert!(
            ["ReachedMax", "NoMoreParallelism", "LockContention"].contains(&&*last["reason_kind"]),
            "the search ended: {last:?}"
        );
    });
}
