// A MutexGuard belongs to the thread that locked: it cannot move to another green thread.
use footprint::sync::Mutex;

static M: Mutex<u32> = Mutex::new(0);

fn main() {
    let g = M.lock();
    let h = footprint::spawn(move || drop(g));
    let _ = h.join();
}
