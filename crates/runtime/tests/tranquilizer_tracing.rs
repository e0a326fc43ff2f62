//! Thread Tranquilizer's `tracing` events (feature `tracing`): one per pass, target
//! `footprint::tranquilizer`, with the reason the stats print. A collecting subscriber,
//! installed globally (the daemon runs on its own thread). A watchdog on it.
#![cfg(feature = "tracing")]

mod common;
use common::with_watchdog;
use footprint_runtime::tranquilizer::TranquilizerConfig;
use footprint_runtime::Runtime;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Fields = BTreeMap<String, String>;

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
        if event.metadata().target() != "footprint::tranquilizer" {
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
fn every_pass_is_an_event_with_its_reason() {
    let events = Arc::new(Mutex::new(Vec::new()));
    tracing::subscriber::set_global_default(Collect(events.clone())).expect("first subscriber");
    with_watchdog(120, "tranquilizer tracing", move || {
        let rt = Runtime::builder()
            .workers(1)
            .pin(false)
            .tranquilizer(
                TranquilizerConfig::new()
                    .sampling(Duration::from_millis(5), 2)
                    .pass(Duration::from_millis(30)),
            )
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let stats = loop {
            rt.block_on(|| {
                for _ in 0..100 {
                    footprint_runtime::yield_now();
                }
            });
            let t = rt.stats().tranquilizer.unwrap();
            if t.passes >= 2 {
                break t;
            }
            assert!(Instant::now() < deadline, "no 2 passes in 60 s: {t}");
        };
        drop(rt);
        let ev = events.lock().unwrap();
        // Every logged decision was traced (events may run ahead of the snapshot by one).
        assert!(
            ev.len() as u64 >= stats.passes,
            "{} events, {} passes",
            ev.len(),
            stats.passes
        );
        for (e, d) in ev.iter().zip(&stats.decisions) {
            assert_eq!(e.get("reason"), Some(&d.reason.to_string()));
            assert_eq!(e.get("class"), Some(&d.kept.class.to_string()));
            assert!(e.contains_key("icx_mean") && e.contains_key("workload"));
        }
    });
}
