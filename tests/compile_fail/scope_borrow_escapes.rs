// A scoped thread's handle (and the borrows it holds) cannot outlive its scope.
fn main() {
    let data = vec![1, 2, 3];
    let escaped = footprint::scope(|s| s.spawn(|| data.len()));
    let _ = escaped.join();
}
