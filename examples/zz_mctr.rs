use footprint_workloads::lock_hot::{self as bodies, Green, OsThreads, THREADS, WORKERS};
fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let green = Green { rt: footprint::Runtime::builder().workers(WORKERS).build().unwrap(), threads: THREADS };
    let os = OsThreads::default();
    let mut g = vec![]; let mut s = vec![];
    for _ in 0..runs {
        g.push(bodies::multiple_ctr(&green).as_secs_f64() * 1e6);
        s.push(bodies::multiple_ctr(&os).as_secs_f64() * 1e6);
    }
    g.sort_by(|a, b| a.partial_cmp(b).unwrap()); s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |v: &Vec<f64>, p: f64| v[((v.len() - 1) as f64 * p) as usize];
    println!("green p10 {:.0} med {:.0} p90 {:.0} | std p10 {:.0} med {:.0} p90 {:.0} | ratio {:.2}", q(&g,0.1), q(&g,0.5), q(&g,0.9), q(&s,0.1), q(&s,0.5), q(&s,0.9), q(&g,0.5)/q(&s,0.5));
}
