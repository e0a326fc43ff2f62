//! The runtime's own `tracing` events (feature `tracing`): `runtime built` and `runtime
//! shutdown` (target `footprint::runtime`), and at trace level one `steal` and one `park` event
//! (target `footprint::sched`) per steal and park the stats count. A collecting subscriber,
//! installed globally (steals and parks happen on the workers). A watchdog on it.
#![cfg(feature = "tracing")]

mod common;
use common::with_watchdog;
use footprint_runtime::{spawn, Runtime};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event: its target, level and fields (the message as `message`), as text.
#[derive(Debug)]
struct Seen {
    target: String,
    level: tracing::Level,
    fields: BTreeMap<String, String>,
}

struct Collect(Arc<Mutex<Vec<Seen>>>);

struct Visitor<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl Subscriber for Collect {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.target().starts_with("footprint::")
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().push(Seen {
            target: event.metadata().target().to_string(),
            level: *event.metadata().level(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn build_shutdown_steals_and_parks_are_events() {
    let events = Arc::new(Mutex::new(Vec::new()));
    tracing::subscriber::set_global_default(Collect(events.clone())).expect("first subscriber");
    with_watchdog(120, "runtime tracing", move || {
        let rt = Runtime::builder().workers(2).pin(false).build().unwrap();
        let id = rt.block_on(footprint_runtime::current_runtime_id);
        rt.block_on(|| {
            // Joins of started, unfinished threads park the joiner; idle workers steal.
            let hs: Vec<_> = (0..64u64)
                .map(|i| {
                    spawn(move || {
                        footprint_runtime::yield_now();
                        i
                    })
                })
                .collect();
            let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, 64 * 63 / 2);
        });
        // Idle workers neither steal nor park: the counts stay put from here.
        while rt.sleeping_workers() < rt.workers() {
            std::thread::yield_now();
        }
        let stats = rt.stats();
        let count = |target: &str, msg: &str| {
            events
                .lock()
                .unwrap()
                .iter()
                .filter(|e| {
                    e.target == target && e.fields.get("message").map(String::as_str) == Some(msg)
                })
                .count() as u64
        };
        let parks: u64 = stats.workers.iter().map(|w| w.parks).sum();
        assert_eq!(
            count("footprint::sched", "steal"),
            stats.steals(),
            "{stats}"
        );
        assert_eq!(count("footprint::sched", "park"), parks, "{stats}");
        assert!(
            parks > 0,
            "no join parked: the test did not test parks\n{stats}"
        );
        let spawned = stats.spawned;
        drop(rt);
        let all = events.lock().unwrap();
        let of_rt = |msg: &str| {
            all.iter()
                .filter(|e| {
                    e.target == "footprint::runtime"
                        && e.fields.get("message").map(String::as_str) == Some(msg)
                        && e.fields.get("id") == Some(&id.to_string())
                })
                .collect::<Vec<_>>()
        };
        let built = of_rt("runtime built");
        assert_eq!(built.len(), 1, "{all:?}");
        assert_eq!(built[0].level, tracing::Level::INFO);
        assert_eq!(built[0].fields["workers"], "2");
        assert_eq!(built[0].fields["cpus"], "[None, None]");
        let down = of_rt("runtime shutdown");
        assert_eq!(down.len(), 1, "{all:?}");
        assert_eq!(down[0].fields["spawned"], spawned.to_string());
        assert_eq!(down[0].fields["finished"], spawned.to_string());
        assert!(all
            .iter()
            .filter(|e| e.target == "footprint::sched")
            .all(|e| e.level == tracing::Level::TRACE));
    });
}
