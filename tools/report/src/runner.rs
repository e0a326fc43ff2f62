//! Runs the experiments one after another, each on its own thread under `catch_unwind` and a time
//! limit: one that panics, returns an error or runs too long becomes a failed section with its
//! error, and the others still run.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::experiments::{Ctx, Experiment};
use crate::model::{Axis, Plot, PlotKind, Section, Status};
use crate::progress::Progress;

/// The text of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".into()
    }
}

/// The section of an experiment that failed with `error`: its status, the error as the verdict,
/// and a placeholder plot (with an empty CSV) that says so.
pub fn failed_section(exp: &Experiment, error: String) -> Section {
    let mut s = Section::new(exp.name, exp.title, "—", "—");
    s.measured = "no figure: the experiment failed".into();
    s.verdict = format!("failed: {error}");
    let plot = Plot::new(
        &format!("{}-failed", exp.name),
        exp.title,
        PlotKind::Lines,
        "series",
        Axis::linear("x", "x"),
        Axis::linear("y", "y"),
    );
    s.plots.push(plot.placeholder(&format!("FAILED: {error}")));
    s.status = Status::Failed(error);
    s
}

/// Runs one experiment with its time limit.
fn run_one(exp: &Experiment, ctx: Ctx) -> Section {
    let limit = exp.limit(ctx.mode);
    let (tx, rx) = mpsc::channel();
    let run = exp.run;
    let spawned = std::thread::Builder::new()
        .name(format!("report-{}", exp.name))
        .spawn(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| run(&ctx)));
            // The receiver is gone only after a time-out; nobody wants the result then.
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return failed_section(exp, format!("could not start its thread: {e}"));
    }
    match rx.recv_timeout(limit) {
        Ok(Ok(Ok(section))) => section,
        Ok(Ok(Err(error))) => failed_section(exp, error),
        Ok(Err(payload)) => failed_section(exp, format!("panicked: {}", panic_text(&*payload))),
        Err(mpsc::RecvTimeoutError::Timeout) => failed_section(
            exp,
            format!(
                "timed out after {:?} (its thread is abandoned; later figures may be disturbed)",
                limit
            ),
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            failed_section(exp, "its thread ended without a result".into())
        }
    }
}

/// Runs `experiments` in order and returns their sections.
pub fn run_all(experiments: &[Experiment], mode: crate::cli::Mode, workers: usize) -> Vec<Section> {
    let estimates: Vec<Duration> = experiments.iter().map(|e| e.estimate(mode)).collect();
    let mut progress = Progress::new(&estimates);
    let mut sections = Vec::new();
    for exp in experiments {
        progress.start(exp.name);
        let ctx = Ctx::new(mode, workers, progress.stepper());
        let t0 = Instant::now();
        let mut section = run_one(exp, ctx);
        section.elapsed = t0.elapsed();
        let outcome = match &section.status {
            Status::Failed(e) => format!("FAILED after {:.1?}: {e}", section.elapsed),
            status => format!("{} in {:.1?}", status.label(), section.elapsed),
        };
        progress.finish(exp.estimate(mode), &outcome);
        sections.push(section);
    }
    progress.close();
    sections
}
