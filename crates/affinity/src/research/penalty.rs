//! 001's penalty model (Pinter and Zalmanovici): the cost of a schedule of jobs on data
//! fragments, with whole-fragment transfers. It evaluates schedules (such as the placement of
//! [`FragmentBatcher`](crate::placement::fragments::FragmentBatcher)) in tests and experiments;
//! the runtime does not consult it.
//!
//! ```
//! use footprint_affinity::research::penalty::{Job, PenaltyModel};
//! let model = PenaltyModel { read: 4, write: 4 };
//! let job = |fragment| Job { fragment, exec: 1, writes: false, after: None };
//! // Two jobs on one fragment, one CPU: one read, then both run.
//! assert_eq!(model.makespan(&[job(1), job(1)], &[vec![0, 1]]), 4 + 1 + 1);
//! ```

use crate::placement::fragments::FragmentId;

/// One job of 001's cost model: it works on fragment `fragment` for `exec` time units, may write
/// it (`writes`: its fragment is dirty afterwards), and becomes ready when job `after` has
/// finished executing (`None`: at time 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// The data fragment.
    pub fragment: FragmentId,
    /// Execution time.
    pub exec: u64,
    /// Whether it dirties the fragment.
    pub writes: bool,
    /// Index (in the flattened job list) of the job that spawns it.
    pub after: Option<usize>,
}

/// 001's penalty model with whole-fragment transfers: reading a fragment costs `read` (`T_r`),
/// writing a dirty one back costs `write` (`T_w`). A CPU's cache holds one fragment; switching to
/// another fragment writes the old one back if dirty and reads the new one (eq. 1 with
/// `l·t_r = T_r`); a dirty fragment is written back when the CPU finishes. When every job writes,
/// each switch costs `T_r + T_w` and the model is eq. 2's `g`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PenaltyModel {
    /// `T_r`.
    pub read: u64,
    /// `T_w`.
    pub write: u64,
}

impl PenaltyModel {
    /// Eq. 2: the penalty of switching from a job on `from` (`None`: an empty CPU) to one on `to`.
    pub fn g(&self, from: Option<FragmentId>, to: FragmentId) -> u64 {
        if from == Some(to) {
            0
        } else {
            self.read + self.write
        }
    }

    /// Simulates `schedule` (job indices per CPU, run in that order; `jobs` indexed by the same
    /// indices) and returns each CPU's finishing time. A job starts when its CPU is free (its
    /// fragment loaded) and its spawner has finished executing.
    ///
    /// # Panics
    /// If the schedule deadlocks (a job waits for one scheduled after it on the same CPU, or a
    /// cycle across CPUs) or names a job twice or out of range.
    pub fn finish_times(&self, jobs: &[Job], schedule: &[Vec<usize>]) -> Vec<u64> {
        let mut placed = vec![false; jobs.len()];
        for &j in schedule.iter().flatten() {
            assert!(!placed[j], "job {j} scheduled twice");
            placed[j] = true;
        }
        let mut done_at: Vec<Option<u64>> = vec![None; jobs.len()];
        let mut next = vec![0usize; schedule.len()];
        let mut clock = vec![0u64; schedule.len()];
        let mut cache: Vec<Option<(FragmentId, bool)>> = vec![None; schedule.len()];
        loop {
            let mut progressed = false;
            for cpu in 0..schedule.len() {
                while let Some(&j) = schedule[cpu].get(next[cpu]) {
                    let job = jobs[j];
                    let ready = match job.after {
                        None => 0,
                        Some(p) => match done_at[p] {
                            Some(t) => t,
                            None => break,
                        },
                    };
                    let mut t = clock[cpu].max(ready);
                    match cache[cpu] {
                        Some((df, _)) if df == job.fragment => {}
                        Some((_, dirty)) => {
                            t += if dirty { self.write } else { 0 } + self.read;
                        }
                        None => t += self.read,
                    }
                    t += job.exec;
                    let dirty =
                        job.writes || matches!(cache[cpu], Some((df, true)) if df == job.fragment);
                    cache[cpu] = Some((job.fragment, dirty));
                    done_at[j] = Some(t);
                    clock[cpu] = t;
                    next[cpu] += 1;
                    progressed = true;
                }
            }
            if (0..schedule.len()).all(|c| next[c] == schedule[c].len()) {
                break;
            }
            assert!(progressed, "the schedule deadlocks");
        }
        (0..schedule.len())
            .map(|cpu| match cache[cpu] {
                Some((_, true)) => clock[cpu] + self.write,
                _ => clock[cpu],
            })
            .collect()
    }

    /// The makespan: the latest finishing time.
    pub fn makespan(&self, jobs: &[Job], schedule: &[Vec<usize>]) -> u64 {
        self.finish_times(jobs, schedule)
            .into_iter()
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::fragments::FragmentBatcher;

    /// 001 §2's worked example: five unit-time threads, two CPUs, T_r = T_w = 4; v0, v2, v3 on
    /// DF1 and v1, v4 on DF2; v0 runs first and spawns the others. Pure CPU affinity (Fig. 2)
    /// against data affinity (Fig. 3), whose placement our batcher computes.
    #[test]
    fn five_thread_example_of_001() {
        let (df1, df2) = (1, 2);
        let model = PenaltyModel { read: 4, write: 4 };
        // v0 only spawns (it does not write its fragment: Fig. 2 shows no T_w(v0)); v1..v4 write.
        let jobs = [
            Job {
                fragment: df1,
                exec: 1,
                writes: false,
                after: None,
            },
            Job {
                fragment: df2,
                exec: 1,
                writes: true,
                after: Some(0),
            },
            Job {
                fragment: df1,
                exec: 1,
                writes: true,
                after: Some(0),
            },
            Job {
                fragment: df1,
                exec: 1,
                writes: true,
                after: Some(0),
            },
            Job {
                fragment: df2,
                exec: 1,
                writes: true,
                after: Some(0),
            },
        ];

        // Pure CPU affinity: the children queue on v0's CPU; the balancer moves the back half
        // (v3, v4) to the idle CPU.
        let mut p1: Vec<usize> = vec![0, 1, 2, 3, 4];
        let p2: Vec<usize> = p1.split_off(3);
        let cpu_affinity = vec![p1, p2];
        assert_eq!(cpu_affinity, vec![vec![0, 1, 2], vec![3, 4]]);

        // Data affinity: place v0..v4 in spawn order (v0 still running when it spawns), then run
        // each worker's batches back to back.
        let mut batcher = FragmentBatcher::new(2);
        for (id, job) in jobs.iter().enumerate() {
            batcher.place(id as u64, job.fragment);
        }
        let data_affinity: Vec<Vec<usize>> = (0..2)
            .map(|w| {
                batcher
                    .run_order(w)
                    .into_iter()
                    .flat_map(|(_, threads)| threads.into_iter().map(|t| t as usize))
                    .collect()
            })
            .collect();
        assert_eq!(
            data_affinity,
            vec![vec![0, 2, 3], vec![1, 4]],
            "Fig. 3's placement"
        );

        let cpu = model.makespan(&jobs, &cpu_affinity);
        let data = model.makespan(&jobs, &data_affinity);
        // The paper's figures number unit slots from 0 and quote the last busy slot: 22 and 14.
        assert_eq!((cpu - 1, data - 1), (22, 14), "makespans {cpu} and {data}");

        // Under eq. 2's g (every job writes) data affinity still wins, by more.
        let all_write: Vec<Job> = jobs.iter().map(|j| Job { writes: true, ..*j }).collect();
        let cpu_g = model.makespan(&all_write, &cpu_affinity);
        let data_g = model.makespan(&all_write, &data_affinity);
        assert!(
            data_g < cpu_g && cpu_g - data_g > cpu - data,
            "{cpu_g} vs {data_g}"
        );
        // g's sum over each CPU's sequence (from an empty CPU) is that CPU's busy time.
        let busy: u64 = [0usize, 2, 3]
            .iter()
            .scan(None, |prev, &j| {
                let cost = model.g(*prev, all_write[j].fragment) + all_write[j].exec;
                *prev = Some(all_write[j].fragment);
                Some(cost)
            })
            .sum();
        assert_eq!(busy, model.finish_times(&all_write, &data_affinity)[0]);
    }
}
