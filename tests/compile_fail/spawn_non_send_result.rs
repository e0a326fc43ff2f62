// The result crosses to the joiner, possibly on another worker: it must be Send.
use std::rc::Rc;

fn main() {
    let h = footprint::spawn(|| Rc::new(1));
    let _ = h.join();
}
