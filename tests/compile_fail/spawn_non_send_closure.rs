// A green thread may run on another worker: its closure must be Send.
use std::rc::Rc;

fn main() {
    let rc = Rc::new(1);
    let h = footprint::spawn(move || *rc + 1);
    let _ = h.join();
}
