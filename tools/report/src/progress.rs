//! The progress display: an `indicatif` bar on a terminal (what is running, how much is left), and
//! one plain line per experiment when stderr is not a terminal (CI logs stay short).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Progress over the experiments, weighted by their time estimates.
pub struct Progress {
    bar: Option<ProgressBar>,
    total_estimate: Duration,
    done_estimate: Duration,
    started: Instant,
    count: usize,
    index: usize,
    current: String,
}

impl Progress {
    /// `estimates`: the expected duration of each experiment, in run order.
    pub fn new(estimates: &[Duration]) -> Progress {
        let total_estimate: Duration = estimates.iter().sum();
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total_estimate.as_millis() as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {msg}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            total_estimate,
            done_estimate: Duration::ZERO,
            started: Instant::now(),
            count: estimates.len(),
            index: 0,
            current: String::new(),
        }
    }

    /// The time left, from the estimates scaled by how fast the finished ones went.
    fn left(&self) -> Duration {
        let remaining = self.total_estimate.saturating_sub(self.done_estimate);
        if self.done_estimate.is_zero() {
            return remaining;
        }
        let speed = self.started.elapsed().as_secs_f64() / self.done_estimate.as_secs_f64();
        remaining.mul_f64(speed.clamp(0.2, 5.0))
    }

    fn message(&self, step: &str) -> String {
        let left = self.left().as_secs();
        let step = if step.is_empty() {
            String::new()
        } else {
            format!(": {step}")
        };
        format!(
            "[{}/{}] {}{step} (~{}m{:02}s left)",
            self.index,
            self.count,
            self.current,
            left / 60,
            left % 60
        )
    }

    /// An experiment starts.
    pub fn start(&mut self, name: &str) {
        self.index += 1;
        self.current = name.to_string();
        match &self.bar {
            Some(bar) => bar.set_message(self.message("")),
            None => eprintln!("report: {}", self.message("starting")),
        }
    }

    /// A handle the running experiment (on its own thread) reports its steps through.
    pub fn stepper(&self) -> Stepper {
        Stepper {
            bar: self.bar.clone(),
            prefix: format!("[{}/{}] {}", self.index, self.count, self.current),
            left: self.left(),
            started: Instant::now(),
        }
    }

    /// The running experiment ended; `estimate` is what it was expected to take.
    pub fn finish(&mut self, estimate: Duration, outcome: &str) {
        self.done_estimate += estimate;
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done_estimate.as_millis() as u64);
                bar.println(format!("{}: {outcome}", self.current));
            }
            None => eprintln!("report: {}: {outcome}", self.current),
        }
    }

    /// All done: removes the bar.
    pub fn close(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Shows the steps of one experiment (on a terminal only; nothing otherwise).
#[derive(Clone)]
pub struct Stepper {
    bar: Option<ProgressBar>,
    prefix: String,
    left: Duration,
    started: Instant,
}

impl Stepper {
    /// Shows `step` as what is running now.
    pub fn step(&self, step: &str) {
        if let Some(bar) = &self.bar {
            let left = self.left.saturating_sub(self.started.elapsed()).as_secs();
            bar.set_message(format!(
                "{}: {step} (~{}m{:02}s left)",
                self.prefix,
                left / 60,
                left % 60
            ));
        }
    }
}
